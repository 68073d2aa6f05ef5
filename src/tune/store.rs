//! The autotuner's file: the best block size per (kernel, device, launch rule, size bucket), as
//! JSON, so that a later process does not tune again. A file that cannot be read or parsed is
//! ignored with a warning and rewritten; one that cannot be written leaves the tuner in memory.

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The file's format version; a file of another version is ignored and rewritten.
const FORMAT: u32 = 1;

/// One remembered choice.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct StoredEntry {
    /// SHA-256 of the kernel's code, hex: an entry for other code is not used.
    pub digest: String,
    /// The chosen block size.
    pub block: u32,
    /// Blocks resident at once with it (grid-stride launches).
    pub resident: u32,
    /// Microseconds per launch when tuned.
    pub micros: f64,
    /// When it was tuned, seconds since the Unix epoch.
    pub tuned_unix: u64,
}

#[derive(Serialize, Deserialize, Default)]
struct File {
    format: u32,
    entries: BTreeMap<String, StoredEntry>,
}

/// The entries in memory and the file they are kept in.
pub(crate) struct Store {
    path: Option<PathBuf>,
    /// Why there is no file (set when none was configured or writing failed).
    pub why_memory_only: Option<String>,
    entries: HashMap<String, StoredEntry>,
    loaded: bool,
    /// Files found damaged (ignored and rewritten).
    pub corrupt: u64,
}

impl Store {
    /// A store kept in `path` (`Err`: memory only, for the reason given).
    pub fn new(path: Result<PathBuf, String>) -> Store {
        let (path, why) = match path {
            Ok(p) => (Some(p), None),
            Err(why) => (None, Some(why)),
        };
        Store {
            path,
            why_memory_only: why,
            entries: HashMap::new(),
            loaded: false,
            corrupt: 0,
        }
    }

    /// The file, if there is one.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The entry under `key`, reading the file the first time.
    pub fn get(&mut self, key: &str) -> Option<&StoredEntry> {
        self.load();
        self.entries.get(key)
    }

    /// Remembers `entry` under `key` and writes the file (merged with what other processes
    /// wrote meanwhile; this process's entries win).
    pub fn put(&mut self, key: String, entry: StoredEntry) {
        self.load();
        self.entries.insert(key, entry);
        self.save();
    }

    /// Forgets every entry, in memory and on disk.
    pub fn clear(&mut self) -> std::io::Result<()> {
        self.entries.clear();
        self.loaded = true;
        match &self.path {
            Some(p) if p.exists() => fs::remove_file(p),
            _ => Ok(()),
        }
    }

    /// How many entries are known.
    pub fn len(&mut self) -> usize {
        self.load();
        self.entries.len()
    }

    fn load(&mut self) {
        if self.loaded {
            return;
        }
        self.loaded = true;
        if let Some(file) = self.read(true) {
            for (k, v) in file.entries {
                self.entries.entry(k).or_insert(v);
            }
        }
    }

    /// The file's entries; `None` when it is absent or damaged (damage is warned about and
    /// counted when `report`: at the first read, not again when merging before a write).
    fn read(&mut self, report: bool) -> Option<File> {
        let path = self.path.clone()?;
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) => {
                let what = format!("cannot be read ({e})");
                if report {
                    self.damaged(&path, &what);
                }
                return None;
            }
        };
        let what = match serde_json::from_slice::<File>(&bytes) {
            Ok(f) if f.format == FORMAT => return Some(f),
            Ok(f) => format!("has format {} (this cudrv writes {FORMAT})", f.format),
            Err(e) => format!("is not a tuning cache ({e})"),
        };
        if report {
            self.damaged(&path, &what);
        }
        None
    }

    fn damaged(&mut self, path: &Path, what: &str) {
        self.corrupt += 1;
        eprintln!(
            "cudrv: tuning cache {} {what}; ignored, and rewritten at the next tuning",
            path.display()
        );
    }

    fn save(&mut self) {
        let Some(path) = self.path.clone() else { return };
        let mut merged = self.read(false).map(|f| f.entries).unwrap_or_default();
        for (k, v) in &self.entries {
            merged.insert(k.clone(), v.clone());
        }
        let file = File {
            format: FORMAT,
            entries: merged,
        };
        if let Err(e) = write_atomically(&path, &file) {
            let why = format!("cannot write {} ({e})", path.display());
            eprintln!("cudrv: tuning cache {why}; continuing in memory");
            self.why_memory_only = Some(why);
            self.path = None;
        }
    }
}

/// Writes the file whole, atomically (`kernel_cache::write_atomically`).
fn write_atomically(path: &Path, file: &File) -> std::io::Result<()> {
    let json = serde_json::to_vec_pretty(file).map_err(std::io::Error::other)?;
    crate::kernel_cache::write_atomically(path, &json)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(block: u32) -> StoredEntry {
        StoredEntry {
            digest: "ab".into(),
            block,
            resident: 0,
            micros: 1.5,
            tuned_unix: 1,
        }
    }

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("cudrv-tune-store-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        dir.join("tune.json")
    }

    #[test]
    fn entries_survive_into_another_store_and_merge() {
        let path = temp("merge");
        let mut a = Store::new(Ok(path.clone()));
        a.put("k1".into(), entry(128));
        let mut b = Store::new(Ok(path.clone()));
        assert_eq!(b.get("k1").map(|e| e.block), Some(128));
        b.put("k2".into(), entry(256));
        // `a` writes again: the file keeps b's entry too.
        a.put("k1".into(), entry(64));
        let mut c = Store::new(Ok(path.clone()));
        assert_eq!(
            (c.get("k1").map(|e| e.block), c.get("k2").map(|e| e.block)),
            (Some(64), Some(256))
        );
        let _ = fs::remove_dir_all(path.parent().unwrap());
    }

    #[test]
    fn a_damaged_file_is_ignored_counted_and_rewritten() {
        for junk in [
            &b"{not json"[..],
            b"",
            b"{\"format\":99,\"entries\":{}}",
            b"\xff\xfe\x00garbage",
        ] {
            let path = temp("damaged");
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(&path, junk).unwrap();
            let mut s = Store::new(Ok(path.clone()));
            assert!(s.get("k").is_none());
            assert_eq!(s.corrupt, 1);
            s.put("k".into(), entry(96));
            assert_eq!(s.corrupt, 1, "counted once, not again when merging before the write");
            let mut again = Store::new(Ok(path.clone()));
            assert_eq!(again.get("k").map(|e| e.block), Some(96), "rewritten as a valid file");
            assert_eq!(again.corrupt, 0);
            let _ = fs::remove_dir_all(path.parent().unwrap());
        }
    }

    #[test]
    fn an_unwritable_place_leaves_the_store_in_memory() {
        let file = std::env::temp_dir().join(format!("cudrv-tune-not-a-dir-{}", std::process::id()));
        fs::write(&file, b"").unwrap();
        let mut s = Store::new(Ok(file.join("tune.json")));
        s.put("k".into(), entry(32));
        assert!(s.path().is_none() && s.why_memory_only.is_some());
        assert_eq!(s.get("k").map(|e| e.block), Some(32));
        let _ = fs::remove_file(&file);
    }
}
