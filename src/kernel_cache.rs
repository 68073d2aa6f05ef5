//! cudrv's compiled-kernel cache: the cubin the driver's JIT makes of a PTX module, kept on disk
//! so that the next process loads it without compiling.
//!
//! The driver has a JIT cache of its own, but it can be disabled (`CUDA_CACHE_DISABLE=1`), full
//! (it is shared with every CUDA program of the machine and small by default), or on a read-only
//! or ephemeral home directory; then every process pays the whole JIT again (a second for a
//! large GEMM kernel). This cache is cudrv's own:
//!
//! - **Where**: `$CUDRV_CACHE_DIR` if set, otherwise `kernels/` under the user's cache directory
//!   (`$XDG_CACHE_HOME/cudrv`, `~/.cache/cudrv` on Linux). `CUDRV_CACHE_DISABLE=1` turns it off.
//! - **Key**: SHA-256 of the PTX text, the device's compute capability, the driver's version and
//!   this cache's format version; one file `<key>.cubin` per compiled module.
//! - **Entries** carry a header (magic, length, SHA-256 of the cubin). A corrupt or truncated
//!   entry is reported once on stderr, ignored, and rewritten by the compile that follows.
//! - **Writes** go to a temporary file renamed into place, so processes can fill the cache at
//!   once and a reader never sees half an entry.
//! - **Size**: at most `$CUDRV_CACHE_MAX_BYTES` (default 1 GiB); a store that goes over removes
//!   the least recently used entries (a hit refreshes an entry's modification time).
//! - A directory that cannot be created or written is reported once and the cache continues in
//!   memory for the process.
//! - Programs compiled at run time with [`crate::nvrtc`] are kept here too (their PTX, cubin, log
//!   and lowered names), keyed by everything the compile depends on.
//! - **What is cached**: every kernel is looked up. A miss is compiled with the driver's JIT
//!   linker (`cuLinkCreate`, the only driver API that hands back a cubin) and stored, except for
//!   PTX with tensor-core instructions: the linker compiles its input as relocatable device code,
//!   and for cudrv's `mma`/`wgmma` GEMM kernels that code was 10-24% slower on the H100 than what
//!   `cuModuleLoadData` makes of the same PTX (docs/kernels/loading.md). Those are loaded by the
//!   driver (and its own JIT cache) unless `cudrv cache warm` has put them in the cache compiled
//!   by ptxas, whose whole-program code runs as fast as the driver's.
//!
//! ```no_run
//! let cache = cudrv::kernel_cache::KernelCache::global();
//! println!("{}", cache.info());
//! let stats = cache.stats();
//! println!("{} hits, {} misses", stats.hits, stats.misses);
//! ```

use std::collections::HashMap;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::SystemTime;

use parking_lot::Mutex;
use sha2::{Digest, Sha256};

/// Environment variable naming the cache directory.
///
/// ```
/// use cudrv::kernel_cache::{KernelCache, CACHE_DIR_ENV};
/// // `CUDRV_CACHE_DIR=/scratch/cudrv my-app` keeps the compiled kernels there.
/// if let Some(dir) = std::env::var_os(CACHE_DIR_ENV) {
///     assert_eq!(KernelCache::from_env().dir(), Some(dir.into()));
/// }
/// ```
pub const CACHE_DIR_ENV: &str = "CUDRV_CACHE_DIR";
/// Environment variable that turns the cache off when it is `1`.
///
/// ```
/// use cudrv::kernel_cache::{KernelCache, CACHE_DISABLE_ENV};
/// if std::env::var(CACHE_DISABLE_ENV).as_deref() == Ok("1") {
///     assert!(!KernelCache::from_env().enabled());
/// }
/// ```
pub const CACHE_DISABLE_ENV: &str = "CUDRV_CACHE_DISABLE";
/// Environment variable bounding the cache's size in bytes.
///
/// ```
/// use cudrv::kernel_cache::{KernelCache, CACHE_MAX_BYTES_ENV, DEFAULT_MAX_BYTES};
/// let bound = std::env::var(CACHE_MAX_BYTES_ENV).ok().and_then(|v| v.parse().ok());
/// assert_eq!(KernelCache::from_env().info().max_bytes, bound.unwrap_or(DEFAULT_MAX_BYTES));
/// ```
pub const CACHE_MAX_BYTES_ENV: &str = "CUDRV_CACHE_MAX_BYTES";
/// The default size bound: 1 GiB.
///
/// ```
/// use cudrv::kernel_cache::{KernelCache, DEFAULT_MAX_BYTES};
/// assert_eq!(DEFAULT_MAX_BYTES, 1 << 30);
/// let dir = std::env::temp_dir().join("cudrv-doc-default-bound");
/// assert_eq!(KernelCache::with_dir(&dir, DEFAULT_MAX_BYTES).info().max_bytes, DEFAULT_MAX_BYTES);
/// # let _ = std::fs::remove_dir_all(&dir);
/// ```
pub const DEFAULT_MAX_BYTES: u64 = 1 << 30;

/// First bytes of every entry; the digit is the entry format's version.
const MAGIC: &[u8; 8] = b"CUDRVKC1";
/// Magic, payload length (u64 LE), SHA-256 of the payload.
const HEADER_BYTES: usize = 8 + 8 + 32;
/// Entry file extension.
const EXTENSION: &str = "cubin";

/// What identifies one compiled module: the PTX and what the compiler's output depends on.
///
/// ```
/// use cudrv::kernel_cache::CacheKey;
/// let a = CacheKey::new("ptx text", (9, 0), 13000);
/// assert_eq!(a, CacheKey::new("ptx text", (9, 0), 13000));
/// assert_ne!(a, CacheKey::new("ptx text", (8, 0), 13000));
/// assert_ne!(a, CacheKey::new("ptx text", (9, 0), 12090));
/// assert_eq!(a.hex().len(), 64);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CacheKey([u8; 32]);

impl CacheKey {
    /// The key of `ptx` (a trailing NUL is ignored) compiled for compute capability `cc` by
    /// driver version `driver` (as `cuDriverGetVersion` gives it, e.g. 13000).
    ///
    /// ```
    /// use cudrv::kernel_cache::CacheKey;
    /// // A trailing NUL (as C strings carry) does not change the key.
    /// assert_eq!(CacheKey::new("ptx\0", (9, 0), 13000), CacheKey::new("ptx", (9, 0), 13000));
    /// ```
    pub fn new(ptx: &str, cc: (u32, u32), driver: i32) -> Self {
        let mut h = Sha256::new();
        h.update(MAGIC);
        h.update(cc.0.to_le_bytes());
        h.update(cc.1.to_le_bytes());
        h.update(driver.to_le_bytes());
        h.update(ptx.trim_end_matches('\0').as_bytes());
        CacheKey(h.finalize().into())
    }

    /// The key of one kernel of cudrv's embedded module whose text has SHA-256 `digest`
    /// (extracted by this cudrv version), so that a hit needs no decompression.
    ///
    /// ```
    /// use cudrv::kernel_cache::CacheKey;
    /// use cudrv::registry::EMBEDDED_MODULES;
    /// let m = &EMBEDDED_MODULES[0];
    /// let key = CacheKey::for_embedded(&m.digest, m.kernels[0], (9, 0), 13000);
    /// assert_ne!(key, CacheKey::for_embedded(&m.digest, m.kernels[0], (8, 0), 13000));
    /// ```
    pub fn for_embedded(digest: &[u8; 32], kernel: &str, cc: (u32, u32), driver: i32) -> Self {
        let mut h = Sha256::new();
        h.update(MAGIC);
        h.update(b"embedded");
        h.update(env!("CARGO_PKG_VERSION").as_bytes());
        h.update(digest);
        h.update((kernel.len() as u64).to_le_bytes());
        h.update(kernel.as_bytes());
        h.update(cc.0.to_le_bytes());
        h.update(cc.1.to_le_bytes());
        h.update(driver.to_le_bytes());
        CacheKey(h.finalize().into())
    }

    /// The key of a runtime-compiled program ([`crate::nvrtc`]): `kind` names what the parts
    /// are, each part is hashed with its length, and this cudrv version is part of the key.
    ///
    /// ```
    /// use cudrv::kernel_cache::CacheKey;
    /// let a = CacheKey::for_parts("nvrtc", &[b"source", b"--fmad=false"]);
    /// assert_eq!(a, CacheKey::for_parts("nvrtc", &[b"source", b"--fmad=false"]));
    /// // Moving bytes between parts changes the key.
    /// assert_ne!(a, CacheKey::for_parts("nvrtc", &[b"source--", b"fmad=false"]));
    /// ```
    pub fn for_parts(kind: &str, parts: &[&[u8]]) -> Self {
        let mut h = Sha256::new();
        h.update(MAGIC);
        h.update(b"parts");
        h.update(env!("CARGO_PKG_VERSION").as_bytes());
        h.update((kind.len() as u64).to_le_bytes());
        h.update(kind.as_bytes());
        for part in parts {
            h.update((part.len() as u64).to_le_bytes());
            h.update(part);
        }
        CacheKey(h.finalize().into())
    }

    /// The key in hexadecimal (the entry's file name without extension).
    ///
    /// ```
    /// use cudrv::kernel_cache::CacheKey;
    /// let hex = CacheKey::new("ptx", (9, 0), 13000).hex();
    /// assert!(hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()));
    /// ```
    pub fn hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// Counters of one process's use of the cache.
///
/// ```
/// let s = cudrv::kernel_cache::KernelCache::global().stats();
/// println!("{} hits, {} misses, {} corrupt entries", s.hits, s.misses, s.corrupt);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Modules found (on disk or in memory).
    pub hits: u64,
    /// Modules not found, compiled and stored.
    pub misses: u64,
    /// Entries written to disk.
    pub stores: u64,
    /// Entries found corrupt or truncated (ignored and rewritten).
    pub corrupt: u64,
    /// Entries removed to stay under the size bound.
    pub evicted: u64,
}

/// The on-disk state of the cache, as [`KernelCache::info`] reports it.
///
/// ```
/// let info = cudrv::kernel_cache::KernelCache::global().info();
/// println!("{info}"); // "kernel cache /home/me/.cache/cudrv/kernels: 96 entries, 3.3 MB of 1074 MB"
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheInfo {
    /// The directory, or `None` when the cache lives in memory only.
    pub dir: Option<PathBuf>,
    /// Why there is no directory, when there is none.
    pub why_memory_only: Option<String>,
    /// Entries on disk.
    pub entries: usize,
    /// Their total size in bytes.
    pub bytes: u64,
    /// The size bound in bytes.
    pub max_bytes: u64,
}

impl std::fmt::Display for CacheInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.dir, &self.why_memory_only) {
            (Some(dir), _) => write!(
                f,
                "kernel cache {}: {} entries, {:.1} MB of {:.0} MB",
                dir.display(),
                self.entries,
                self.bytes as f64 / 1e6,
                self.max_bytes as f64 / 1e6
            ),
            (None, why) => write!(
                f,
                "kernel cache in memory only ({})",
                why.as_deref().unwrap_or("disabled")
            ),
        }
    }
}

/// The cache: a directory (when usable) and the entries this process has used.
///
/// ```
/// use cudrv::kernel_cache::{CacheKey, KernelCache};
/// let dir = std::env::temp_dir().join(format!("cudrv-doc-cache-{}", std::process::id()));
/// let cache = KernelCache::with_dir(&dir, 1 << 20);
/// let key = CacheKey::new(".version 8.0 ...", (9, 0), 13000);
/// assert!(cache.get(&key).is_none());
/// cache.put(&key, b"cubin bytes");
/// // Another process (here: another cache on the same directory) finds it.
/// let other = KernelCache::with_dir(&dir, 1 << 20);
/// assert_eq!(&*other.get(&key).unwrap(), b"cubin bytes");
/// assert_eq!((other.stats().hits, cache.stats().stores), (1, 1));
/// assert_eq!(cache.info().entries, 1);
/// assert_eq!(cache.clear()?, 1);
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct KernelCache {
    dir: Mutex<Result<PathBuf, String>>,
    max_bytes: u64,
    enabled: bool,
    memory: Mutex<HashMap<CacheKey, Arc<[u8]>>>,
    hits: AtomicU64,
    misses: AtomicU64,
    stores: AtomicU64,
    corrupt: AtomicU64,
    evicted: AtomicU64,
}

impl KernelCache {
    /// The process's cache, configured from the environment on first use.
    ///
    /// ```
    /// let cache = cudrv::kernel_cache::KernelCache::global();
    /// println!("kernel cache: {:?}", cache.dir());
    /// ```
    pub fn global() -> &'static KernelCache {
        static GLOBAL: OnceLock<KernelCache> = OnceLock::new();
        GLOBAL.get_or_init(KernelCache::from_env)
    }

    /// A cache configured from `CUDRV_CACHE_DIR`, `CUDRV_CACHE_DISABLE` and
    /// `CUDRV_CACHE_MAX_BYTES`.
    ///
    /// ```
    /// let cache = cudrv::kernel_cache::KernelCache::from_env();
    /// let info = cache.info();
    /// println!("{} entries, {} of {} bytes", info.entries, info.bytes, info.max_bytes);
    /// ```
    pub fn from_env() -> KernelCache {
        let enabled = std::env::var(CACHE_DISABLE_ENV).map_or(true, |v| v != "1");
        let max_bytes = std::env::var(CACHE_MAX_BYTES_ENV)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(DEFAULT_MAX_BYTES);
        KernelCache::new(cache_dir(Some("kernels")), max_bytes, enabled)
    }

    /// A cache in `dir` (`Err`: memory only, for the reason given), bounded to `max_bytes`.
    ///
    /// ```
    /// use cudrv::kernel_cache::{CacheKey, KernelCache};
    /// // A directory that cannot be written (here: its parent is a file) leaves the cache in
    /// // memory only, with the reason, at the first store.
    /// let file = std::env::temp_dir().join(format!("cudrv-doc-not-a-dir-{}", std::process::id()));
    /// std::fs::write(&file, b"")?;
    /// let cache = KernelCache::with_dir(file.join("kernels"), 1 << 20);
    /// let key = CacheKey::new("ptx", (9, 0), 13000);
    /// cache.put(&key, b"cubin");
    /// assert!(cache.dir().is_none() && cache.info().why_memory_only.is_some());
    /// assert!(cache.get(&key).is_some()); // still served from memory
    /// # std::fs::remove_file(&file)?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn with_dir(dir: impl Into<PathBuf>, max_bytes: u64) -> KernelCache {
        KernelCache::new(Ok(dir.into()), max_bytes, true)
    }

    fn new(dir: Result<PathBuf, String>, max_bytes: u64, enabled: bool) -> KernelCache {
        KernelCache {
            dir: Mutex::new(dir),
            max_bytes,
            enabled,
            memory: Mutex::new(HashMap::new()),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            stores: AtomicU64::new(0),
            corrupt: AtomicU64::new(0),
            evicted: AtomicU64::new(0),
        }
    }

    /// Whether the cache is in use at all (`CUDRV_CACHE_DISABLE=1` turns it off).
    ///
    /// ```
    /// use cudrv::kernel_cache::KernelCache;
    /// let dir = std::env::temp_dir().join("cudrv-doc-enabled");
    /// assert!(KernelCache::with_dir(&dir, 1 << 20).enabled());
    /// # let _ = std::fs::remove_dir_all(&dir);
    /// ```
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// The directory in use, if any.
    ///
    /// ```
    /// use cudrv::kernel_cache::KernelCache;
    /// let dir = std::env::temp_dir().join("cudrv-doc-dir");
    /// assert_eq!(KernelCache::with_dir(&dir, 1 << 20).dir(), Some(dir.clone()));
    /// # let _ = std::fs::remove_dir_all(&dir);
    /// ```
    pub fn dir(&self) -> Option<PathBuf> {
        self.dir.lock().as_ref().ok().cloned()
    }

    /// This process's counters.
    ///
    /// ```
    /// use cudrv::kernel_cache::{CacheKey, KernelCache};
    /// let dir = std::env::temp_dir().join(format!("cudrv-doc-stats-{}", std::process::id()));
    /// let cache = KernelCache::with_dir(&dir, 1 << 20);
    /// let key = CacheKey::new("compiled once", (9, 0), 13000);
    /// assert!(cache.get(&key).is_none());
    /// cache.put(&key, b"cubin"); // a miss: compiled and stored
    /// assert!(cache.get(&key).is_some());
    /// let s = cache.stats();
    /// assert_eq!((s.misses, s.stores, s.hits), (1, 1, 1));
    /// # let _ = std::fs::remove_dir_all(&dir);
    /// ```
    pub fn stats(&self) -> CacheStats {
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            stores: self.stores.load(Ordering::Relaxed),
            corrupt: self.corrupt.load(Ordering::Relaxed),
            evicted: self.evicted.load(Ordering::Relaxed),
        }
    }

    /// The cubin stored under `key`, from memory or disk; `None` when there is none (or it was
    /// corrupt, which is reported and counted).
    ///
    /// ```
    /// use cudrv::kernel_cache::{CacheKey, KernelCache};
    /// let dir = std::env::temp_dir().join(format!("cudrv-doc-get-{}", std::process::id()));
    /// let cache = KernelCache::with_dir(&dir, 1 << 20);
    /// let key = CacheKey::new("ptx", (9, 0), 13000);
    /// cache.put(&key, b"\x7fELF...");
    /// // A damaged file is noticed (checksum), counted, and treated as a miss.
    /// for entry in std::fs::read_dir(&dir)? {
    ///     std::fs::write(entry?.path(), b"garbage")?;
    /// }
    /// let fresh = KernelCache::with_dir(&dir, 1 << 20);
    /// assert!(fresh.get(&key).is_none());
    /// assert_eq!(fresh.stats().corrupt, 1);
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn get(&self, key: &CacheKey) -> Option<Arc<[u8]>> {
        if !self.enabled {
            return None;
        }
        if let Some(hit) = self.memory.lock().get(key).cloned() {
            self.hits.fetch_add(1, Ordering::Relaxed);
            return Some(hit);
        }
        let path = self.dir().map(|d| d.join(format!("{}.{EXTENSION}", key.hex())))?;
        let bytes = fs::read(&path).ok()?;
        match decode(&bytes) {
            Ok(cubin) => {
                let cubin: Arc<[u8]> = Arc::from(cubin);
                // A hit makes the entry the most recently used (eviction goes by this time).
                let _ = fs::File::options()
                    .append(true)
                    .open(&path)
                    .and_then(|f| f.set_modified(SystemTime::now()));
                self.memory.lock().insert(*key, cubin.clone());
                self.hits.fetch_add(1, Ordering::Relaxed);
                Some(cubin)
            }
            Err(why) => {
                self.corrupt.fetch_add(1, Ordering::Relaxed);
                eprintln!(
                    "cudrv: kernel cache entry {} is {why}; ignoring it (it is rewritten)",
                    path.display()
                );
                let _ = fs::remove_file(&path);
                None
            }
        }
    }

    /// Keeps `cubin` under `key`: in memory, and on disk when the directory is usable. A
    /// directory that cannot be written is reported once and dropped for the process.
    ///
    /// ```
    /// use cudrv::kernel_cache::{CacheKey, KernelCache};
    /// let dir = std::env::temp_dir().join(format!("cudrv-doc-put-{}", std::process::id()));
    /// let cache = KernelCache::with_dir(&dir, 1 << 20);
    /// cache.put(&CacheKey::new("ptx", (9, 0), 13000), &[0u8; 1000]);
    /// assert_eq!(cache.stats().stores, 1);
    /// # std::fs::remove_dir_all(&dir).unwrap();
    /// ```
    pub fn put(&self, key: &CacheKey, cubin: &[u8]) {
        if !self.enabled {
            return;
        }
        self.misses.fetch_add(1, Ordering::Relaxed);
        self.memory.lock().insert(*key, Arc::from(cubin));
        let Some(dir) = self.dir() else { return };
        match write_entry(&dir, key, cubin) {
            Ok(()) => {
                self.stores.fetch_add(1, Ordering::Relaxed);
                let removed = evict(&dir, self.max_bytes);
                self.evicted.fetch_add(removed as u64, Ordering::Relaxed);
            }
            Err(e) => {
                let why = format!("cannot write to {}: {e}", dir.display());
                eprintln!("cudrv: kernel cache {why}; continuing in memory");
                *self.dir.lock() = Err(why);
            }
        }
    }

    /// Removes every entry on disk and in memory; returns how many files were removed.
    ///
    /// ```
    /// use cudrv::kernel_cache::{CacheKey, KernelCache};
    /// let dir = std::env::temp_dir().join(format!("cudrv-doc-clear-{}", std::process::id()));
    /// let cache = KernelCache::with_dir(&dir, 1 << 20);
    /// cache.put(&CacheKey::new("a", (9, 0), 13000), b"1");
    /// cache.put(&CacheKey::new("b", (9, 0), 13000), b"2");
    /// assert_eq!(cache.clear()?, 2);
    /// assert_eq!(cache.info().entries, 0);
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn clear(&self) -> std::io::Result<usize> {
        self.memory.lock().clear();
        let Some(dir) = self.dir() else { return Ok(0) };
        let mut removed = 0;
        for (path, _, _) in entries(&dir) {
            fs::remove_file(path)?;
            removed += 1;
        }
        Ok(removed)
    }

    /// The directory, its entries and their size.
    ///
    /// ```
    /// let info = cudrv::kernel_cache::KernelCache::global().info();
    /// match &info.dir {
    ///     Some(dir) => println!("{}: {} entries, {} bytes", dir.display(), info.entries, info.bytes),
    ///     None => println!("memory only: {}", info.why_memory_only.as_deref().unwrap_or("disabled")),
    /// }
    /// ```
    pub fn info(&self) -> CacheInfo {
        let dir = self.dir.lock().clone();
        let listed = dir.as_ref().map(|d| entries(d)).unwrap_or_default();
        CacheInfo {
            why_memory_only: dir.as_ref().err().cloned(),
            dir: dir.ok(),
            entries: listed.len(),
            bytes: listed.iter().map(|(_, len, _)| len).sum(),
            max_bytes: self.max_bytes,
        }
    }
}

/// An entry's bytes: header, then the cubin.
fn encode(cubin: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_BYTES + cubin.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(cubin.len() as u64).to_le_bytes());
    out.extend_from_slice(&Sha256::digest(cubin));
    out.extend_from_slice(cubin);
    out
}

/// The cubin of an entry, or what is wrong with it.
fn decode(bytes: &[u8]) -> Result<&[u8], String> {
    if bytes.len() < HEADER_BYTES || &bytes[..8] != MAGIC {
        return Err("not a cudrv kernel cache entry (bad header)".into());
    }
    let len = u64::from_le_bytes(bytes[8..16].try_into().expect("8 bytes")) as usize;
    let cubin = &bytes[HEADER_BYTES..];
    if cubin.len() != len {
        return Err(format!("truncated ({} of {len} bytes)", cubin.len()));
    }
    if Sha256::digest(cubin).as_slice() != &bytes[16..HEADER_BYTES] {
        return Err("corrupt (checksum mismatch)".into());
    }
    Ok(cubin)
}

/// Writes an entry atomically: a temporary file in the same directory, renamed into place.
fn write_entry(dir: &Path, key: &CacheKey, cubin: &[u8]) -> std::io::Result<()> {
    write_atomically(&dir.join(format!("{}.{EXTENSION}", key.hex())), &encode(cubin))
}

/// Where cudrv keeps a cache on disk (`Err`: nowhere, for the reason given):
/// `$CUDRV_CACHE_DIR` itself when set, otherwise the user's cache directory's `cudrv/` (and
/// `leaf` below it); nowhere with `CUDRV_CACHE_DISABLE=1` or without a user cache directory.
/// The kernel cache is `cache_dir(Some("kernels"))`; the autotuner's file lies in `cache_dir(None)`.
pub(crate) fn cache_dir(leaf: Option<&str>) -> Result<PathBuf, String> {
    if std::env::var(CACHE_DISABLE_ENV).is_ok_and(|v| v == "1") {
        return Err(format!("{CACHE_DISABLE_ENV}=1"));
    }
    match std::env::var_os(CACHE_DIR_ENV).filter(|v| !v.is_empty()) {
        Some(dir) => Ok(PathBuf::from(dir)),
        None => dirs::cache_dir()
            .map(|d| {
                let root = d.join("cudrv");
                leaf.map_or(root.clone(), |l| root.join(l))
            })
            .ok_or_else(|| format!("no user cache directory; set {CACHE_DIR_ENV}")),
    }
}

/// Writes `bytes` to `path` through a temporary file of the same directory (created if need
/// be), synced and renamed over `path`: a reader sees the old file or the new one, never half of
/// one, and writers of other processes or threads do not meet on the temporary name.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(dir)?;
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let name = path.file_name().map_or_else(Default::default, |n| n.to_string_lossy());
    let tmp = dir.join(format!(
        ".{name}.{}.{}.tmp",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    let result = (|| {
        let mut file = fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_data()?;
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// The entries of `dir`: path, size, modification time.
fn entries(dir: &Path) -> Vec<(PathBuf, u64, SystemTime)> {
    let Ok(read) = fs::read_dir(dir) else { return Vec::new() };
    read.flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == EXTENSION))
        .filter_map(|e| {
            let meta = e.metadata().ok()?;
            Some((e.path(), meta.len(), meta.modified().unwrap_or(SystemTime::UNIX_EPOCH)))
        })
        .collect()
}

/// Removes the least recently used entries until the directory holds at most `max_bytes`;
/// returns how many it removed.
fn evict(dir: &Path, max_bytes: u64) -> usize {
    let mut listed = entries(dir);
    let mut total: u64 = listed.iter().map(|(_, len, _)| len).sum();
    if total <= max_bytes {
        return 0;
    }
    listed.sort_by_key(|(_, _, modified)| *modified);
    let mut removed = 0;
    for (path, len, _) in listed {
        if total <= max_bytes {
            break;
        }
        if fs::remove_file(&path).is_ok() {
            total -= len;
            removed += 1;
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("cudrv-kc-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn keys_depend_on_everything_the_cubin_does() {
        let k = CacheKey::new("a", (9, 0), 13000);
        assert_eq!(
            k,
            CacheKey::new("a\0", (9, 0), 13000),
            "the NUL terminator does not count"
        );
        assert_ne!(k, CacheKey::new("b", (9, 0), 13000));
        assert_ne!(k, CacheKey::new("a", (9, 1), 13000));
        assert_ne!(k, CacheKey::new("a", (10, 0), 13000));
        assert_ne!(k, CacheKey::new("a", (9, 0), 13010));
        assert!(k.hex().chars().all(|c| c.is_ascii_hexdigit()));
    }

    #[test]
    fn entries_round_trip_and_damage_is_caught() {
        let cubin = b"\x7fELF some cubin bytes".to_vec();
        let entry = encode(&cubin);
        assert_eq!(decode(&entry).unwrap(), &cubin[..]);
        assert!(decode(&entry[..entry.len() - 1]).unwrap_err().contains("truncated"));
        let mut flipped = entry.clone();
        *flipped.last_mut().unwrap() ^= 1;
        assert!(decode(&flipped).unwrap_err().contains("checksum"));
        assert!(decode(b"garbage").unwrap_err().contains("header"));
    }

    #[test]
    fn a_stored_entry_is_found_by_another_cache_and_corruption_is_rewritten() {
        let dir = temp_dir("roundtrip");
        let key = CacheKey::new("ptx", (9, 0), 13000);
        let first = KernelCache::with_dir(&dir, DEFAULT_MAX_BYTES);
        assert!(first.get(&key).is_none());
        first.put(&key, b"cubin one");
        assert_eq!(first.stats().stores, 1);
        // A second cache (as another process would) reads the file.
        let second = KernelCache::with_dir(&dir, DEFAULT_MAX_BYTES);
        assert_eq!(&*second.get(&key).unwrap(), b"cubin one");
        assert_eq!(second.stats().hits, 1);
        // Damage the file: a third cache reports it, drops it, and a put rewrites it.
        let path = dir.join(format!("{}.cubin", key.hex()));
        let mut bytes = fs::read(&path).unwrap();
        bytes.truncate(bytes.len() - 3);
        fs::write(&path, bytes).unwrap();
        let third = KernelCache::with_dir(&dir, DEFAULT_MAX_BYTES);
        assert!(third.get(&key).is_none());
        assert_eq!(third.stats().corrupt, 1);
        third.put(&key, b"cubin one");
        assert_eq!(
            &*KernelCache::with_dir(&dir, DEFAULT_MAX_BYTES).get(&key).unwrap(),
            b"cubin one"
        );
        assert!(fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .all(|e| !e.file_name().to_string_lossy().ends_with(".tmp")));
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_least_recently_used_entries_go_first() {
        let dir = temp_dir("evict");
        let cache = KernelCache::with_dir(&dir, 3 * (HEADER_BYTES as u64 + 100));
        let keys: Vec<CacheKey> = (0..3).map(|i| CacheKey::new(&format!("m{i}"), (9, 0), 1)).collect();
        for (i, k) in keys.iter().enumerate() {
            cache.put(k, &[i as u8; 100]);
            // Distinct, increasing modification times.
            let path = dir.join(format!("{}.cubin", k.hex()));
            let t = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000 + i as u64);
            fs::File::options()
                .append(true)
                .open(path)
                .unwrap()
                .set_modified(t)
                .unwrap();
        }
        // Use the oldest: it becomes the newest.
        assert!(KernelCache::with_dir(&dir, u64::MAX).get(&keys[0]).is_some());
        // A fourth entry pushes the total over: the least recently used (keys[1]) goes.
        cache.put(&CacheKey::new("m3", (9, 0), 1), &[3; 100]);
        assert_eq!(cache.stats().evicted, 1);
        let fresh = KernelCache::with_dir(&dir, u64::MAX);
        assert!(fresh.get(&keys[1]).is_none());
        assert!(fresh.get(&keys[0]).is_some());
        assert!(fresh.get(&keys[2]).is_some());
        assert_eq!(cache.info().entries, 3);
        assert_eq!(cache.clear().unwrap(), 3);
        assert_eq!(cache.info().entries, 0);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_unwritable_directory_degrades_to_memory() {
        // A path below a regular file can never be created, whoever runs the test.
        let file = temp_dir("file");
        fs::write(&file, b"not a directory").unwrap();
        let cache = KernelCache::with_dir(file.join("kernels"), DEFAULT_MAX_BYTES);
        let key = CacheKey::new("ptx", (8, 0), 1);
        cache.put(&key, b"cubin");
        assert!(cache.dir().is_none());
        assert!(cache.info().why_memory_only.unwrap().contains("cannot write"));
        assert_eq!(&*cache.get(&key).unwrap(), b"cubin", "kept in memory");
        fs::remove_file(&file).unwrap();
    }
}
