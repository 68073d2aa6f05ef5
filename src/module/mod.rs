//! Modules (PTX, cubin, fatbin) and the kernels in them ([`Function`], in `function.rs`).

use std::ffi::{c_void, CString};
use std::path::Path;
use std::ptr;
use std::sync::{Arc, Weak};

use crate::context::Context;
use crate::driver::{cu, describe};
use crate::error::{Error, Result};
use crate::kernel_cache::{CacheKey, KernelCache};
use crate::ptx_info;
use crate::registry::EmbeddedModule;
use crate::sys::{self, CUjit_option, CUresult};

mod function;
pub(crate) use function::FunctionCore;
pub use function::{Function, FunctionAttributes};

/// A module loaded into a context.
///
/// ```no_run
/// let ctx = cudrv::Context::new(0)?;
/// let ptx = include_str!("../../examples/kernels/add_one.ptx");
/// let module = cudrv::Module::from_ptx(&ctx, ptx, "add_one")?;
/// let kernel = module.function("add_one")?;
/// # Ok::<(), cudrv::Error>(())
/// ```
#[derive(Debug)]
pub struct Module {
    raw: sys::CUmodule,
    ctx: ModuleContext,
    name: String,
    digest: [u8; 32],
}

/// How a module refers to its context (docs/ownership.md): a module a program loads holds the
/// context strongly; a module the context's own kernel registry loads holds it weakly, since the
/// registry is part of the context and a strong reference would keep the context alive forever.
/// The [`Function`]s handed out of either kind hold the context strongly.
#[derive(Debug)]
enum ModuleContext {
    Shared(Arc<Context>),
    Registry { ctx: Weak<Context>, raw: sys::CUcontext },
}

// SAFETY: a CUmodule handle may be used from any thread.
unsafe impl Send for Module {}
// SAFETY: as above; `&Module` only looks things up.
unsafe impl Sync for Module {}

/// The size of the buffer the JIT compiler writes its error log into.
const JIT_LOG_BYTES: usize = 16 * 1024;

/// PTX text as the driver takes it: NUL-terminated (text that already ends in one is borrowed).
fn nul_terminated<'a>(ptx: &'a str, name: &str) -> Result<std::borrow::Cow<'a, [u8]>> {
    if ptx.ends_with('\0') {
        return Ok(std::borrow::Cow::Borrowed(ptx.as_bytes()));
    }
    let c = CString::new(ptx).map_err(|e| {
        Error::InvalidArgument(format!(
            "PTX module `{name}` contains a NUL byte at offset {}",
            e.nul_position()
        ))
    })?;
    Ok(std::borrow::Cow::Owned(c.into_bytes_with_nul()))
}

/// ELF magic (cubin) and fatbin magic: images that are not PTX text.
fn is_binary_image(image: &[u8]) -> bool {
    image.starts_with(crate::image::ELF_MAGIC) || image.starts_with(&crate::image::FATBIN_MAGIC.to_le_bytes())
}

impl Module {
    /// Loads PTX text; `name` appears in errors and in the kernel registry.
    ///
    /// The compiled module comes from cudrv's [kernel cache](crate::kernel_cache) when it holds
    /// this PTX for this device and driver; otherwise the PTX is compiled and the result kept
    /// there for the next process.
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// let ptx = include_str!("../../examples/kernels/add_one.ptx");
    /// let module = cudrv::Module::from_ptx(&ctx, ptx, "add_one")?;
    /// assert_eq!(module.name(), "add_one");
    /// // PTX the driver cannot compile is an error naming the module, not a crash.
    /// assert!(cudrv::Module::from_ptx(&ctx, ".version 7.0\n.target sm_70\nnonsense", "bad").is_err());
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn from_ptx(ctx: &Arc<Context>, ptx: &str, name: &str) -> Result<Arc<Module>> {
        Self::load_ptx(ctx, ptx, name, false)
    }

    /// Loads a cubin or fatbin image, or PTX text given as bytes. A binary image is checked
    /// against its own headers first: a truncated one, or one whose headers claim more bytes than
    /// the slice holds, is an `InvalidArgument` (the driver would read past the slice).
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// // e.g. from `nvcc -cubin -arch=sm_90` (this one loads on compute capability 9.0)
    /// let cubin: &[u8] = include_bytes!("../../tests/data/test_kernels.sm_90.cubin");
    /// let module = cudrv::Module::from_image(&ctx, cubin, "test_kernels")?;
    /// // A truncated image is refused before the driver sees it.
    /// assert!(cudrv::Module::from_image(&ctx, &cubin[..64], "cut").is_err());
    /// # let _ = module;
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn from_image(ctx: &Arc<Context>, image: &[u8], name: &str) -> Result<Arc<Module>> {
        if is_binary_image(image) {
            // The driver takes no length: an image whose headers reach past the slice is refused.
            crate::image::validate(image, name)?;
            return Self::load(ctx, image, name, None, digest_of(b"image", &[image]));
        }
        let text = std::str::from_utf8(image).map_err(|_| {
            Error::InvalidArgument(format!(
                "module `{name}` is neither a cubin (ELF), a fatbin, nor UTF-8 PTX text"
            ))
        })?;
        Self::from_ptx(ctx, text, name)
    }

    /// Loads a `.ptx`, `.cubin` or `.fatbin` file.
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// let module = cudrv::Module::from_file(&ctx, "examples/kernels/add_one.ptx")?;
    /// let add_one = module.function("add_one")?;
    /// # let _ = add_one;
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn from_file(ctx: &Arc<Context>, path: impl AsRef<Path>) -> Result<Arc<Module>> {
        let path = path.as_ref();
        let image = std::fs::read(path).map_err(|e| Error::Io {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        Self::from_image(ctx, &image, &path.display().to_string())
    }

    fn load(ctx: &Arc<Context>, image: &[u8], name: &str, ptx: Option<&str>, digest: [u8; 32]) -> Result<Arc<Module>> {
        Self::load_as(ctx, image, name, ptx, digest, false)
    }

    /// Loads PTX text for `ctx`'s kernel registry: the module refers to `ctx` weakly.
    pub(crate) fn from_ptx_for_registry(ctx: &Arc<Context>, ptx: &str, name: &str) -> Result<Arc<Module>> {
        Self::load_ptx(ctx, ptx, name, true)
    }

    /// One kernel of one of cudrv's embedded modules, alone in a module, as the kernel registry
    /// loads it (and through the same kernel-cache entry): `cudrv cache warm` uses this to
    /// compile every kernel ahead of time.
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// let m = &cudrv::registry::EMBEDDED_MODULES[0];
    /// let module = cudrv::Module::from_embedded(&ctx, m, m.kernels[0])?;
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn from_embedded(ctx: &Arc<Context>, module: &'static EmbeddedModule, kernel: &str) -> Result<Arc<Module>> {
        Self::embedded_kernel(ctx, module, kernel, false)
    }

    /// [`from_embedded`](Self::from_embedded) for `ctx`'s kernel registry.
    pub(crate) fn embedded_kernel_for_registry(
        ctx: &Arc<Context>,
        module: &'static EmbeddedModule,
        kernel: &str,
    ) -> Result<Arc<Module>> {
        Self::embedded_kernel(ctx, module, kernel, true)
    }

    /// Through the kernel cache under a key known without decompressing the module: a hit loads
    /// the cached cubin at once; a miss decompresses the module, takes the kernel's own PTX out
    /// of it, compiles and keeps it.
    fn embedded_kernel(
        ctx: &Arc<Context>,
        module: &'static EmbeddedModule,
        kernel: &str,
        registry: bool,
    ) -> Result<Arc<Module>> {
        let name = format!("{}:{kernel}", module.name);
        let digest = digest_of(b"embedded", &[&module.digest, kernel.as_bytes()]);
        let key = cache_key(ctx, |cc, driver| {
            CacheKey::for_embedded(&module.digest, kernel, cc, driver)
        });
        if let Some(loaded) = Self::cached(ctx, key.as_ref(), &name, digest, registry) {
            return Ok(loaded);
        }
        let ptx = module.ptx()?;
        let key = key.filter(|_| !module.tensor_cores);
        match ptx_info::entry_module(ptx, kernel) {
            Some(one) => Self::compile_and_keep(ctx, key, &one, &name, digest, registry),
            None => Self::compile_and_keep(ctx, key, ptx, module.name, digest, registry),
        }
    }

    /// PTX through the kernel cache: a cached cubin if there is one the driver accepts,
    /// otherwise compile, keep the cubin, and load it.
    fn load_ptx(ctx: &Arc<Context>, ptx: &str, name: &str, registry: bool) -> Result<Arc<Module>> {
        let key = cache_key(ctx, |cc, driver| CacheKey::new(ptx, cc, driver));
        let digest = digest_of(b"ptx", &[ptx.trim_end_matches('\0').as_bytes()]);
        if let Some(loaded) = Self::cached(ctx, key.as_ref(), name, digest, registry) {
            return Ok(loaded);
        }
        let key = key.filter(|_| !ptx_info::uses_tensor_cores(ptx));
        Self::compile_and_keep(ctx, key, ptx, name, digest, registry)
    }

    /// The module of the cubin cached under `key`, if there is one the driver accepts.
    fn cached(
        ctx: &Arc<Context>,
        key: Option<&CacheKey>,
        name: &str,
        digest: [u8; 32],
        registry: bool,
    ) -> Option<Arc<Module>> {
        let cubin = KernelCache::global().get(key?)?;
        Self::load_as(ctx, &cubin, name, None, digest, registry).ok()
    }

    /// Compiles `ptx` with the JIT linker, keeps the cubin under `key` and loads it. Without a
    /// key (the cache is off, or the PTX has tensor-core instructions, of which the JIT linker
    /// makes slower code than `cuModuleLoadData`: docs/kernels/loading.md), or when the JIT
    /// linker fails, the driver loads the PTX itself, which gives the usual errors and log.
    /// Tensor-core kernels are still found in the cache when `cudrv cache warm` put them there
    /// compiled by ptxas.
    fn compile_and_keep(
        ctx: &Arc<Context>,
        key: Option<CacheKey>,
        ptx: &str,
        name: &str,
        digest: [u8; 32],
        registry: bool,
    ) -> Result<Arc<Module>> {
        let text = nul_terminated(ptx, name)?;
        if let Some(key) = key {
            if let Ok(cubin) = crate::jit::compile_to_cubin(ctx, &text, name) {
                KernelCache::global().put(&key, &cubin);
                return Self::load_as(ctx, &cubin, name, Some(ptx), digest, registry);
            }
        }
        Self::load_as(ctx, &text, name, Some(ptx), digest, registry)
    }

    fn load_as(
        ctx: &Arc<Context>,
        image: &[u8],
        name: &str,
        ptx: Option<&str>,
        digest: [u8; 32],
        registry: bool,
    ) -> Result<Arc<Module>> {
        ctx.bind_to_thread()?;
        let mut log = vec![0u8; JIT_LOG_BYTES];
        let mut options = [
            CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
            CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
        ];
        // The driver reads option values as pointer-sized words: a pointer, then a size.
        let mut values = [log.as_mut_ptr().cast::<c_void>(), JIT_LOG_BYTES as *mut c_void];
        let mut raw = ptr::null_mut();
        let load = sys::resolve::cuModuleLoadDataEx()?;
        // SAFETY: `image` is a NUL-terminated PTX text or a complete binary image; the option
        // arrays have equal length and the log buffer outlives the call.
        let code = unsafe {
            load(
                &mut raw,
                image.as_ptr().cast(),
                options.len() as u32,
                options.as_mut_ptr(),
                values.as_mut_ptr(),
            )
        };
        if code != CUresult::CUDA_SUCCESS {
            let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
            return Err(module_error(
                code,
                name,
                ptx,
                String::from_utf8_lossy(&log[..end]).into_owned(),
            ));
        }
        let ctx = if registry {
            ModuleContext::Registry {
                ctx: Arc::downgrade(ctx),
                raw: ctx.raw(),
            }
        } else {
            ModuleContext::Shared(ctx.clone())
        };
        Ok(Arc::new(Module {
            raw,
            ctx,
            name: name.to_string(),
            digest,
        }))
    }

    /// A SHA-256 of the code the module was loaded from (its PTX text, its binary image, or the
    /// embedded module and kernel): what [`crate::tune`] keys remembered launch configurations
    /// by, so that changed code is tuned afresh.
    ///
    /// ```no_run
    /// # let ctx = cudrv::Context::new(0)?;
    /// let ptx = include_str!("../../examples/kernels/add_one.ptx");
    /// let a = cudrv::Module::from_ptx(&ctx, ptx, "a")?;
    /// let b = cudrv::Module::from_ptx(&ctx, ptx, "b")?;
    /// assert_eq!(a.digest(), b.digest()); // same code, whatever the name
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn digest(&self) -> &[u8; 32] {
        &self.digest
    }

    /// The module's name.
    ///
    /// ```no_run
    /// # let ctx = cudrv::Context::new(0)?;
    /// let m = cudrv::Module::from_ptx(&ctx, include_str!("../../examples/kernels/add_one.ptx"), "mine")?;
    /// assert_eq!(m.name(), "mine");
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The context the module is loaded in; `None` only for a module of a context's kernel
    /// registry once that context is gone (a [`Function`] keeps its context alive, so a module
    /// reached through one always has it).
    ///
    /// ```no_run
    /// # use std::sync::Arc;
    /// # let ctx = cudrv::Context::new(0)?;
    /// let m = cudrv::Module::from_ptx(&ctx, include_str!("../../examples/kernels/add_one.ptx"), "add_one")?;
    /// assert!(Arc::ptr_eq(&m.context().unwrap(), &ctx));
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn context(&self) -> Option<Arc<Context>> {
        match &self.ctx {
            ModuleContext::Shared(ctx) => Some(ctx.clone()),
            ModuleContext::Registry { ctx, .. } => ctx.upgrade(),
        }
    }

    /// The driver's context handle of the module.
    fn raw_context(&self) -> sys::CUcontext {
        match &self.ctx {
            ModuleContext::Shared(ctx) => ctx.raw(),
            ModuleContext::Registry { raw, .. } => *raw,
        }
    }

    /// The kernel `name`, with its attributes read once.
    ///
    /// ```no_run
    /// # let ctx = cudrv::Context::new(0)?;
    /// let m = cudrv::Module::from_ptx(&ctx, include_str!("../../examples/kernels/add_one.ptx"), "add_one")?;
    /// let f = m.function("add_one")?;
    /// assert_eq!(f.name(), "add_one");
    /// // A misspelt name lists the kernels the module has.
    /// let err = m.function("add_on").unwrap_err().to_string();
    /// assert!(err.contains("add_one"), "{err}");
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn function(self: &Arc<Self>, name: &str) -> Result<Function> {
        let ctx = self
            .context()
            .ok_or_else(|| Error::InvalidArgument(format!("module `{}`: its context has been dropped", self.name)))?;
        Ok(self.function_core(name)?.with_context(&ctx))
    }

    /// The kernel `name` without a reference to its context (the registry's cache).
    pub(crate) fn function_core(self: &Arc<Self>, name: &str) -> Result<FunctionCore> {
        let cname = CString::new(name)
            .map_err(|_| Error::InvalidArgument(format!("kernel name {name:?} contains a NUL byte")))?;
        let mut raw = ptr::null_mut();
        let get = sys::resolve::cuModuleGetFunction()?;
        // SAFETY: writes one CUfunction through a valid pointer; the name is NUL-terminated.
        let code = unsafe { get(&mut raw, self.raw, cname.as_ptr()) };
        if code == CUresult::CUDA_ERROR_NOT_FOUND {
            let known = ptx_known_kernels(self);
            return Err(Error::UnknownKernel {
                name: name.to_string(),
                known,
            });
        }
        crate::driver::check(code, "cuModuleGetFunction")?;
        FunctionCore::new(raw, self.clone(), name)
    }

    /// The device address and size in bytes of the `__device__` global `name`.
    ///
    /// ```no_run
    /// # let ctx = cudrv::Context::new(0)?;
    /// let m = cudrv::Module::from_ptx(&ctx, include_str!("../../examples/kernels/add_one.ptx"), "add_one")?;
    /// // `calls` is a `.global .u32` of the module: 4 bytes.
    /// let (address, bytes) = m.global("calls")?;
    /// assert_eq!(bytes, 4);
    /// assert_ne!(address, 0);
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn global(&self, name: &str) -> Result<(sys::CUdeviceptr, usize)> {
        let cname = CString::new(name)
            .map_err(|_| Error::InvalidArgument(format!("global name {name:?} contains a NUL byte")))?;
        let (mut ptr, mut bytes) = (0, 0);
        // SAFETY: writes a pointer and a size through valid pointers; the name is NUL-terminated.
        unsafe { cu!(cuModuleGetGlobal_v2(&mut ptr, &mut bytes, self.raw, cname.as_ptr()))? };
        Ok((ptr, bytes))
    }
}

/// Kernel names of a module, for the error that a name is missing (none for binary images).
fn ptx_known_kernels(module: &Module) -> Vec<String> {
    let mut count = 0u32;
    // SAFETY: writes one count through a valid pointer (driver 12.4+; absent means unknown).
    let counted = unsafe { cu!(cuModuleGetFunctionCount(&mut count, module.raw)) };
    if counted.is_err() || count == 0 {
        return Vec::new();
    }
    let mut functions = vec![ptr::null_mut(); count as usize];
    // SAFETY: the array has room for `count` handles.
    if unsafe { cu!(cuModuleEnumerateFunctions(functions.as_mut_ptr(), count, module.raw)) }.is_err() {
        return Vec::new();
    }
    let mut names: Vec<String> = functions
        .into_iter()
        .filter_map(|f| {
            let mut name = ptr::null();
            // SAFETY: `f` came from the module; the driver returns a static NUL-terminated name.
            unsafe { cu!(cuFuncGetName(&mut name, f)) }.ok()?;
            // SAFETY: checked success; the string is NUL-terminated and lives with the module.
            Some(unsafe { std::ffi::CStr::from_ptr(name) }.to_string_lossy().into_owned())
        })
        .collect();
    names.sort();
    names
}

fn module_error(code: CUresult, module: &str, ptx: Option<&str>, log: String) -> Error {
    let (name, mut message) = describe(code);
    if code == CUresult::CUDA_ERROR_UNSUPPORTED_PTX_VERSION {
        let isa = ptx
            .and_then(ptx_info::isa_version)
            .map(|(a, b)| format!("PTX ISA {a}.{b}"))
            .unwrap_or_else(|| "its PTX ISA".into());
        let driver = crate::driver::driver_version()
            .map(|v| format!("CUDA {v}"))
            .unwrap_or_else(|_| "an unknown version".into());
        message = format!(
            "{message}: the module declares {isa}, newer than this driver ({driver}) accepts; \
             rebuild it for an older PTX ISA (cudrv's own kernels use 8.0) or update the driver"
        );
    }
    Error::ModuleLoad {
        module: module.to_string(),
        code: code.0,
        name,
        message,
        log,
    }
}

/// The cache key `make` gives for `ctx`'s device and the driver, or `None` when the kernel
/// cache is off.
/// SHA-256 over `kind` and each part with its length.
fn digest_of(kind: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(kind);
    for part in parts {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part);
    }
    h.finalize().into()
}

fn cache_key(ctx: &Arc<Context>, make: impl FnOnce((u32, u32), i32) -> CacheKey) -> Option<CacheKey> {
    if !KernelCache::global().enabled() {
        return None;
    }
    let driver = crate::driver::driver_version().ok()?;
    Some(make(ctx.compute_capability(), driver.0))
}

impl Drop for Module {
    fn drop(&mut self) {
        // A registry module is dropped by its context's Drop, before the context is released.
        let _ = crate::context::bind_raw(self.raw_context());
        // SAFETY: loaded by this value and unloaded once; every Function holds an Arc to it.
        let _ = unsafe { sys::cuModuleUnload(self.raw) };
    }
}
