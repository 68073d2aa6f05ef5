//! The kernel registry: kernel name to [`Function`], loaded lazily per context.
//!
//! Every context starts with cudrv's embedded PTX modules (built from `ptx/*.cu`, embedded by
//! build.rs zstd-compressed, and decompressed once per process, the first time one of a module's
//! kernels is asked for). Users add their own PTX from a string, a file or a directory. A module is loaded
//! (JIT-compiled by the driver) the first time one of its kernels is asked for, and the function
//! is cached, so later look-ups cost a hash-map read. The embedded modules are loaded one kernel
//! at a time (the module's text with that kernel's definition only, see
//! [`ptx_info::entry_module`]): the driver compiles a whole module when it loads it, and a GEMM
//! needs one kernel of a module of a dozen. A user's module is loaded whole, since its kernels
//! may share module-scope variables. The modules linked on use ([`ON_USE_MODULES`]) join a
//! context's registry when the code that launches their kernels first asks for one (the
//! crate-internal `Context::kernel_on_use`): a program that never does, such as one that only
//! copies memory, does not link their PTX.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use parking_lot::{Mutex, RwLock};
use rustc_hash::FxHashMap;

use crate::context::Context;
use crate::error::{Error, Result};
use crate::module::{Function, FunctionCore, Module};
use crate::ptx_info;

/// A PTX module compiled into the crate, zstd-compressed.
///
/// ```
/// let m = &cudrv::registry::EMBEDDED_MODULES[0];
/// let ptx: &'static str = m.ptx()?; // decompressed on first use, then kept
/// assert_eq!(ptx.len(), m.ptx_len + 1); // NUL-terminated
/// assert!(m.kernels.iter().all(|k| ptx.contains(&format!(".entry {k}("))));
/// # Ok::<(), cudrv::Error>(())
/// ```
#[derive(Debug)]
pub struct EmbeddedModule {
    /// The module's name (its `ptx/<name>.cu` source).
    pub name: &'static str,
    /// The virtual architecture it was compiled for, e.g. `compute_80` or `compute_90a`.
    pub arch: &'static str,
    /// The PTX text as one zstd frame (`ptx/<name>.ptx.zst`).
    pub compressed: &'static [u8],
    /// The length of the PTX text in bytes.
    pub ptx_len: usize,
    /// SHA-256 of the PTX text (computed at build time).
    pub digest: [u8; 32],
    /// Whether the PTX has tensor-core instructions ([`ptx_info::uses_tensor_cores`]).
    pub tensor_cores: bool,
    /// The kernels it defines.
    pub kernels: &'static [&'static str],
    /// The text, once decompressed.
    text: OnceLock<Box<str>>,
}

include!(concat!(env!("OUT_DIR"), "/kernels.rs"));

impl EmbeddedModule {
    /// An entry of the generated table.
    const fn new(
        name: &'static str,
        arch: &'static str,
        compressed: &'static [u8],
        ptx_len: usize,
        digest: [u8; 32],
        tensor_cores: bool,
        kernels: &'static [&'static str],
    ) -> Self {
        Self {
            name,
            arch,
            compressed,
            ptx_len,
            digest,
            tensor_cores,
            kernels,
            text: OnceLock::new(),
        }
    }

    /// The PTX text, NUL-terminated: decompressed the first time it is asked for in this
    /// process, then kept for the process's life.
    ///
    /// ```
    /// let m = &cudrv::registry::EMBEDDED_MODULES[0];
    /// let first = m.ptx()?;
    /// assert!(std::ptr::eq(first, m.ptx()?)); // decompressed once
    /// assert!(first.contains(".entry"));
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn ptx(&'static self) -> Result<&'static str> {
        if let Some(text) = self.text.get() {
            return Ok(text);
        }
        let text = self.decompress()?;
        Ok(self.text.get_or_init(|| text))
    }

    /// Decompresses the PTX text (NUL-terminated) anew, without keeping it; [`ptx`](Self::ptx)
    /// is the cached form.
    ///
    /// ```
    /// let m = &cudrv::registry::EMBEDDED_MODULES[0];
    /// let text = m.decompress()?;
    /// assert_eq!(text.len(), m.ptx_len + 1);
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn decompress(&self) -> Result<Box<str>> {
        let corrupt = |message: String| Error::Io {
            path: format!("cudrv's embedded PTX module `{}`", self.name),
            message,
        };
        // One byte more than the text, so that a frame longer than the table says is caught.
        let mut bytes =
            zstd::bulk::decompress(self.compressed, self.ptx_len + 1).map_err(|e| corrupt(e.to_string()))?;
        if bytes.len() != self.ptx_len {
            return Err(corrupt(format!(
                "{} bytes decompressed, {} expected",
                bytes.len(),
                self.ptx_len
            )));
        }
        bytes.push(0);
        let text = String::from_utf8(bytes).map_err(|e| corrupt(format!("not UTF-8 text: {e}")))?;
        Ok(text.into_boxed_str())
    }

    /// The (major, minor) compute capability the module needs and whether it needs exactly that
    /// major/minor (the `a` suffix: architecture-specific features such as wgmma).
    ///
    /// ```
    /// use cudrv::registry::EMBEDDED_MODULES;
    /// for m in &EMBEDDED_MODULES {
    ///     let ((major, minor), exact) = m.required_capability();
    ///     println!("{}: sm_{major}{minor}{}", m.name, if exact { "a" } else { "" });
    /// }
    /// ```
    pub fn required_capability(&self) -> ((u32, u32), bool) {
        let digits = self.arch.trim_start_matches("compute_");
        let exact = digits.ends_with('a');
        let digits = digits.trim_end_matches('a');
        let n: u32 = digits.parse().unwrap_or(0);
        ((n / 10, n % 10), exact)
    }

    /// Whether a device of compute capability `cc` can load this module.
    ///
    /// ```
    /// use cudrv::registry::EMBEDDED_MODULES;
    /// let on_h100 = EMBEDDED_MODULES.iter().filter(|m| m.runs_on((9, 0))).count();
    /// let on_a100 = EMBEDDED_MODULES.iter().filter(|m| m.runs_on((8, 0))).count();
    /// assert!(on_h100 > on_a100); // the sm_90a modules load only on 9.0
    /// ```
    pub fn runs_on(&self, cc: (u32, u32)) -> bool {
        let (need, exact) = self.required_capability();
        if exact {
            cc == need
        } else {
            cc >= need
        }
    }
}

#[derive(Debug, Clone)]
struct Source {
    name: String,
    ptx: Text,
}

/// A source's PTX: a user's text, loaded whole (its kernels may share module-scope variables),
/// or one of cudrv's embedded modules, loaded one kernel at a time (its kernels share no state)
/// and decompressed when first needed.
#[derive(Debug, Clone)]
enum Text {
    Owned(Arc<str>),
    Embedded(&'static EmbeddedModule),
}

/// A loaded module: the index of its source and, for a source loaded one kernel at a time, the
/// kernel.
type ModuleKey = (usize, Option<String>);

/// Kernel name to function, for one context.
///
/// ```no_run
/// let ctx = cudrv::Context::new(0)?;
/// ctx.registry().register_ptx("mine", include_str!("../examples/kernels/add_one.ptx"))?;
/// let f = ctx.kernel("add_one")?;
/// # Ok::<(), cudrv::Error>(())
/// ```
#[derive(Default)]
pub struct KernelRegistry {
    /// Modules that can be loaded, by name.
    sources: RwLock<Vec<Source>>,
    /// Kernel name to index into `sources` (later registrations shadow earlier ones).
    kernels: RwLock<HashMap<String, usize>>,
    /// Modules loaded so far, by index into `sources` and, for a module loaded one kernel at a
    /// time, the kernel.
    loaded: Mutex<HashMap<ModuleKey, Arc<Module>>>,
    /// Functions looked up so far (without their context: the registry is part of it). Looked
    /// up by name on every launch of a registry kernel, hence the cheaper hash (FxHash; SipHash
    /// took a third of a repeated GEMM's host instructions).
    functions: RwLock<FxHashMap<String, FunctionCore>>,
}

impl std::fmt::Debug for KernelRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let modules: Vec<String> = self.sources.read().iter().map(|s| s.name.clone()).collect();
        f.debug_struct("KernelRegistry")
            .field("modules", &modules)
            .field("kernels", &self.kernels.read().len())
            .finish_non_exhaustive()
    }
}

impl KernelRegistry {
    /// A registry holding the embedded modules whose architecture is at most `cc`.
    pub(crate) fn with_embedded(cc: (u32, u32)) -> Self {
        let registry = KernelRegistry::default();
        for module in EMBEDDED_MODULES.iter().filter(|m| m.runs_on(cc)) {
            registry.add(
                module.name.to_string(),
                Text::Embedded(module),
                module.kernels.iter().map(|k| k.to_string()),
            );
        }
        registry
    }

    /// Adds `module`, linked on use, unless an earlier call did (under the sources' write lock,
    /// so concurrent first launches add it once; only a first launch of its kernels calls this).
    fn add_on_use(&self, module: &'static EmbeddedModule) {
        let mut sources = self.sources.write();
        if sources
            .iter()
            .any(|s| matches!(s.ptx, Text::Embedded(m) if std::ptr::eq(m, module)))
        {
            return;
        }
        sources.push(Source {
            name: module.name.to_string(),
            ptx: Text::Embedded(module),
        });
        let index = sources.len() - 1;
        let (mut map, mut functions) = (self.kernels.write(), self.functions.write());
        for kernel in module.kernels {
            functions.remove(*kernel);
            map.insert(kernel.to_string(), index);
        }
    }

    fn add(&self, name: String, ptx: Text, kernels: impl IntoIterator<Item = String>) -> usize {
        let mut sources = self.sources.write();
        let mut map = self.kernels.write();
        sources.push(Source { name, ptx });
        let index = sources.len() - 1;
        let mut functions = self.functions.write();
        for kernel in kernels {
            functions.remove(&kernel);
            map.insert(kernel, index);
        }
        index
    }

    /// Registers a PTX module from text; its kernels shadow any earlier ones of the same name.
    /// Returns the kernel names it defines. The module is loaded on first use.
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// let kernels = ctx.registry().register_ptx("mine", include_str!("../examples/kernels/add_one.ptx"))?;
    /// assert_eq!(kernels, vec!["add_one".to_string()]);
    /// let add_one = ctx.kernel("add_one")?; // found by name from now on
    /// # let _ = add_one;
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn register_ptx(&self, name: &str, ptx: impl Into<String>) -> Result<Vec<String>> {
        let ptx: String = ptx.into();
        let kernels = ptx_info::entries(&ptx);
        if kernels.is_empty() {
            return Err(Error::InvalidArgument(format!(
                "PTX module `{name}` defines no kernels (no `.entry` directive)"
            )));
        }
        self.add(name.to_string(), Text::Owned(Arc::from(ptx)), kernels.clone());
        Ok(kernels)
    }

    /// Registers a `.ptx` file (module name: the file stem).
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// let kernels = ctx.registry().register_ptx_file("examples/kernels/add_one.ptx")?;
    /// assert!(kernels.contains(&"add_one".to_string()));
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn register_ptx_file(&self, path: impl AsRef<Path>) -> Result<Vec<String>> {
        let path = path.as_ref();
        let ptx = std::fs::read_to_string(path).map_err(|e| Error::Io {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        self.register_ptx(&name, ptx)
    }

    /// Registers every `.ptx` file in a directory (not recursive), in name order.
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// // Every .ptx file a build step wrote, e.g. nvcc --ptx kernels/*.cu -odir target/ptx.
    /// let kernels = ctx.registry().register_ptx_dir("examples/kernels")?;
    /// println!("registered {}", kernels.join(", "));
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn register_ptx_dir(&self, dir: impl AsRef<Path>) -> Result<Vec<String>> {
        let dir = dir.as_ref();
        let io = |e: std::io::Error| Error::Io {
            path: dir.display().to_string(),
            message: e.to_string(),
        };
        let mut files: Vec<_> = std::fs::read_dir(dir)
            .map_err(io)?
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "ptx"))
            .collect();
        files.sort();
        let mut all = Vec::new();
        for file in files {
            all.extend(self.register_ptx_file(file)?);
        }
        Ok(all)
    }

    /// Every kernel name the registry can provide, sorted.
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// let names = ctx.registry().kernel_names();
    /// assert!(names.windows(2).all(|w| w[0] <= w[1]));
    /// assert!(names.iter().any(|n| n == "fill_f32"));
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn kernel_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.kernels.read().keys().cloned().collect();
        names.sort();
        names
    }

    /// Whether `name` is a registered kernel.
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// assert!(ctx.registry().contains("axpy_f32") && !ctx.registry().contains("axpy_f128"));
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn contains(&self, name: &str) -> bool {
        self.kernels.read().contains_key(name)
    }

    /// The kernel `name`, loading its module into `ctx` on first use.
    pub(crate) fn function(&self, ctx: &Arc<Context>, name: &str) -> Result<Function> {
        if let Some(f) = self.functions.read().get(name) {
            return Ok(f.with_context(ctx));
        }
        let Some(index) = self.kernels.read().get(name).copied() else {
            return Err(Error::UnknownKernel {
                name: name.to_string(),
                known: self.kernel_names(),
            });
        };
        let module = self.module(ctx, index, name)?;
        let function = module.function_core(name)?;
        self.functions.write().insert(name.to_string(), function.clone());
        Ok(function.with_context(ctx))
    }

    /// The loaded module of source `index` that holds `kernel`: the whole module, or for a
    /// source loaded one kernel at a time, the module of that kernel alone.
    fn module(&self, ctx: &Arc<Context>, index: usize, kernel: &str) -> Result<Arc<Module>> {
        let source = self.sources.read()[index].clone();
        let per_kernel = matches!(source.ptx, Text::Embedded(_));
        let key = (index, per_kernel.then(|| kernel.to_string()));
        let mut loaded = self.loaded.lock();
        if let Some(m) = loaded.get(&key) {
            return Ok(m.clone());
        }
        let module = match &source.ptx {
            Text::Embedded(embedded) => Module::embedded_kernel_for_registry(ctx, embedded, kernel)?,
            Text::Owned(text) => Module::from_ptx_for_registry(ctx, text, &source.name)?,
        };
        loaded.insert(key, module.clone());
        Ok(module)
    }
}

impl KernelRegistry {
    /// Unloads every module the registry loaded (its context is being dropped: no Function of
    /// it is left, since each holds the context).
    pub(crate) fn unload_all(&self) {
        self.functions.write().clear();
        self.loaded.lock().clear();
    }
}

impl Context {
    /// The kernel `name` from this context's registry (loaded on first use, then cached).
    ///
    /// An unknown name is [`Error::UnknownKernel`], listing the names the registry has.
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// let fill = ctx.kernel("fill_f32")?; // loaded on first use
    /// assert!(matches!(ctx.kernel("fill_f33"), Err(cudrv::Error::UnknownKernel { .. })));
    /// # let _ = fill;
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn kernel(self: &Arc<Self>, name: &str) -> Result<Function> {
        self.registry().function(self, name)
    }

    /// The kernel `name` of `module`, one of the modules linked on use ([`ON_USE_MODULES`]):
    /// [`kernel`](Self::kernel), with the module added to this context's registry the first
    /// time one of its kernels is asked for (a module this device cannot run is not added, and
    /// the name stays unknown).
    pub(crate) fn kernel_on_use(self: &Arc<Self>, name: &str, module: &'static EmbeddedModule) -> Result<Function> {
        match self.registry().function(self, name) {
            Err(Error::UnknownKernel { .. })
                if module.runs_on(self.compute_capability()) && module.kernels.contains(&name) =>
            {
                self.registry().add_on_use(module);
                self.registry().function(self, name)
            }
            found => found,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every module: the ones in every context's registry, and the ones linked on use.
    fn all_modules() -> impl Iterator<Item = &'static EmbeddedModule> {
        EMBEDDED_MODULES.iter().chain(ON_USE_MODULES.iter().copied())
    }

    #[test]
    fn embedded_modules_are_listed_with_their_kernels() {
        assert!(!EMBEDDED_MODULES.is_empty());
        for m in all_modules() {
            let ptx = m.ptx().unwrap();
            assert!(ptx.ends_with('\0'), "{} is not NUL-terminated", m.name);
            assert_eq!(ptx.len(), m.ptx_len + 1, "{}", m.name);
            assert!(!m.kernels.is_empty(), "{} has no kernels", m.name);
            assert_eq!(ptx_info::isa_version(ptx), Some((8, 0)), "{}", m.name);
            assert!(std::ptr::eq(ptx, m.ptx().unwrap()), "{}: decompressed once", m.name);
        }
    }

    #[test]
    fn on_use_modules_join_a_registry_once_and_shadow_nothing_before() {
        let registry = KernelRegistry::with_embedded((9, 0));
        let embedded: std::collections::HashSet<&str> = EMBEDDED_MODULES
            .iter()
            .flat_map(|m| m.kernels.iter().copied())
            .collect();
        for m in ON_USE_MODULES {
            assert!(m.kernels.iter().all(|k| !embedded.contains(k)), "{}", m.name);
            assert!(!registry.kernels.read().contains_key(m.kernels[0]), "{}", m.name);
            registry.add_on_use(m);
            registry.add_on_use(m);
            let sources = registry.sources.read();
            assert_eq!(sources.iter().filter(|s| s.name == m.name).count(), 1, "{}", m.name);
            let index = sources.len() - 1;
            drop(sources);
            assert!(m
                .kernels
                .iter()
                .all(|k| registry.kernels.read().get(*k) == Some(&index)));
        }
        assert!(GEMM_DMMA90_F32_MODULE.kernels.contains(&"gemm_dmma90_f32_l_nn"));
    }

    #[test]
    fn corrupt_embedded_data_is_an_error() {
        let truncated = EmbeddedModule::new(
            "t",
            "compute_80",
            &EMBEDDED_MODULES[0].compressed[..8],
            100,
            [0; 32],
            false,
            &[],
        );
        let e = truncated.decompress().unwrap_err();
        assert!(e.to_string().contains("embedded PTX module `t`"), "{e}");
        let m = &EMBEDDED_MODULES[0];
        let wrong_len = EmbeddedModule::new("w", "compute_80", m.compressed, m.ptx_len + 1, m.digest, false, &[]);
        assert!(wrong_len.decompress().unwrap_err().to_string().contains("expected"));
    }

    #[test]
    fn embedded_modules_split_into_one_kernel_each() {
        for m in all_modules() {
            let ptx = m.ptx().unwrap();
            let header: Vec<&str> = ptx.lines().take_while(|l| !l.contains(".entry")).collect();
            for &k in m.kernels {
                let one = ptx_info::entry_module(ptx, k).unwrap_or_else(|| panic!("{}: no {k}", m.name));
                assert_eq!(ptx_info::entries(&one), vec![k.to_string()], "{}", m.name);
                assert!(one.lines().zip(&header).all(|(a, b)| a == *b), "{}:{k} header", m.name);
                assert!(one.ends_with('\0'), "{}:{k} is not NUL-terminated", m.name);
                if m.kernels.len() > 1 {
                    assert!(one.len() < ptx.len(), "{}:{k}", m.name);
                }
                // The kernel's body is whole: as many braces open as close.
                assert_eq!(one.matches('{').count(), one.matches('}').count(), "{}:{k}", m.name);
            }
        }
    }

    #[test]
    fn architecture_filter() {
        let m = |arch| EmbeddedModule::new("m", arch, &[], 0, [0; 32], false, &[]);
        assert!(m("compute_80").runs_on((9, 0)));
        assert!(m("compute_80").runs_on((8, 0)));
        assert!(!m("compute_80").runs_on((7, 5)));
        assert!(m("compute_90a").runs_on((9, 0)));
        assert!(!m("compute_90a").runs_on((10, 0)));
    }

    #[test]
    fn unknown_kernels_and_empty_modules_are_errors() {
        let r = KernelRegistry::with_embedded((9, 0));
        assert!(r.contains("fill_f32"));
        assert!(!r.contains("no_such_kernel"));
        let e = r.register_ptx("empty", ".version 8.0\n.target sm_80\n").unwrap_err();
        assert!(e.to_string().contains("defines no kernels"), "{e}");
        let added = r
            .register_ptx("mine", ".version 8.0\n.visible .entry mine_k()\n{ret;}\n")
            .unwrap();
        assert_eq!(added, vec!["mine_k".to_string()]);
        assert!(r.kernel_names().contains(&"mine_k".to_string()));
    }
}
