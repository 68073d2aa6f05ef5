//! Runtime compilation: CUDA C++ to PTX (and to a cubin for one device) through NVRTC, loaded at
//! run time like the driver.
//!
//! libnvrtc is found the first time a program is compiled (`$CUDRV_LIBNVRTC`, then
//! `libnvrtc.so.13` / `.so.12` / `.so`; any NVRTC since 12.0): a machine without it gets
//! [`Error::NoLibrary`] from that call, and nothing else in cudrv needs it. A source that
//! `#include`s headers gets the CUDA include directories found on the machine
//! ([`cuda_include_dirs`]) after its own include paths; a compile error is [`Error::Nvrtc`] with
//! the compiler's log and the options it ran with.
//!
//! ```no_run
//! use cudrv::nvrtc::Program;
//! let ctx = cudrv::Context::new(0)?;
//! let compiled = Program::new(
//!     r#"extern "C" __global__ void twice(float* x, int n) {
//!         int i = blockIdx.x * blockDim.x + threadIdx.x;
//!         if (i < n) x[i] *= 2.0f;
//!     }"#,
//! )
//! .arch_for(&ctx)
//! .compile()?;
//! let module = cudrv::module::Module::from_ptx(&ctx, compiled.ptx(), "twice")?;
//! let twice = module.function("twice")?;
//! # let _ = twice;
//! # Ok::<(), cudrv::Error>(())
//! ```

mod cache;
mod headers;
mod library;

use std::ffi::{c_char, c_int, CStr, CString};
use std::path::Path;

pub use headers::{cuda_include_dirs, missing_header_hint};

use crate::context::Context;
use crate::error::{Error, Result};
use crate::kernel_cache::KernelCache;
use library::{library, status_name, Library, ProgramHandle};

/// A CUDA C++ source with its compile options, headers and name expressions; [`Program::compile`]
/// runs NVRTC on it.
///
/// ```
/// use cudrv::nvrtc::Program;
/// let p = Program::new("extern \"C\" __global__ void k() {}")
///     .name("k.cu")
///     .arch("compute_80")
///     .define("N", Some("4"))
///     .option("--use_fast_math");
/// assert_eq!(p.options(), ["--gpu-architecture=compute_80", "-DN=4", "--use_fast_math"]);
/// ```
#[derive(Clone, Debug, Default)]
pub struct Program {
    source: String,
    name: Option<String>,
    options: Vec<String>,
    headers: Vec<(String, String)>,
    name_expressions: Vec<String>,
    cubin: bool,
    no_cache: bool,
}

impl Program {
    /// A program of `source` with no options (NVRTC's default architecture).
    ///
    /// ```
    /// let p = cudrv::nvrtc::Program::new("__global__ void k() {}");
    /// assert!(p.options().is_empty());
    /// ```
    pub fn new(source: impl Into<String>) -> Self {
        Program {
            source: source.into(),
            ..Default::default()
        }
    }

    /// The program's file name in the compiler's messages (default `default_program`).
    ///
    /// ```
    /// let p = cudrv::nvrtc::Program::new("").name("fused_chain.cu");
    /// # let _ = p;
    /// ```
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Compiles for `arch`: a virtual architecture (`compute_90`) gives PTX only, a real one
    /// (`sm_90`) also lets [`Program::cubin`] take the machine code.
    ///
    /// ```
    /// let p = cudrv::nvrtc::Program::new("").arch("sm_90");
    /// assert_eq!(p.options(), ["--gpu-architecture=sm_90"]);
    /// ```
    pub fn arch(self, arch: &str) -> Self {
        self.option(format!("--gpu-architecture={arch}"))
    }

    /// Compiles for the device of `ctx`: `sm_XY` of its compute capability when a cubin is asked
    /// for, else `compute_XY` (PTX the driver finishes for the device when it loads it). Call
    /// after [`Program::cubin`].
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// let p = cudrv::nvrtc::Program::new("").arch_for(&ctx);
    /// assert!(p.options()[0].starts_with("--gpu-architecture=compute_"));
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn arch_for(self, ctx: &Context) -> Self {
        let (major, minor) = ctx.compute_capability();
        let kind = if self.cubin { "sm" } else { "compute" };
        self.arch(&format!("{kind}_{major}{minor}"))
    }

    /// Adds a raw NVRTC option (`-lineinfo`, `--std=c++17`, `--maxrregcount=64`, ...).
    ///
    /// ```
    /// let p = cudrv::nvrtc::Program::new("").option("-lineinfo");
    /// assert_eq!(p.options(), ["-lineinfo"]);
    /// ```
    pub fn option(mut self, option: impl Into<String>) -> Self {
        self.options.push(option.into());
        self
    }

    /// Adds a directory to search for `#include`d headers (before the CUDA include directories).
    ///
    /// ```
    /// let p = cudrv::nvrtc::Program::new("").include_path("/opt/mylib/include");
    /// assert_eq!(p.options(), ["--include-path=/opt/mylib/include"]);
    /// ```
    pub fn include_path(self, dir: impl AsRef<Path>) -> Self {
        let dir = dir.as_ref().display().to_string();
        self.option(format!("--include-path={dir}"))
    }

    /// Defines a macro: `-DNAME` or `-DNAME=VALUE`.
    ///
    /// ```
    /// let p = cudrv::nvrtc::Program::new("").define("TILE", Some("32")).define("FAST", None);
    /// assert_eq!(p.options(), ["-DTILE=32", "-DFAST"]);
    /// ```
    pub fn define(self, name: &str, value: Option<&str>) -> Self {
        match value {
            Some(v) => self.option(format!("-D{name}={v}")),
            None => self.option(format!("-D{name}")),
        }
    }

    /// Provides a header from memory: `#include "name"` in the source reads `contents`.
    ///
    /// ```
    /// let p = cudrv::nvrtc::Program::new("#include \"tile.h\"\n")
    ///     .header("tile.h", "#define TILE 32\n");
    /// # let _ = p;
    /// ```
    pub fn header(mut self, name: impl Into<String>, contents: impl Into<String>) -> Self {
        self.headers.push((name.into(), contents.into()));
        self
    }

    /// Asks for the lowered (mangled) name of a `__global__` function or template instance, e.g.
    /// `scale<float>`; [`Compiled::lowered_name`] gives it after compiling.
    ///
    /// ```
    /// let p = cudrv::nvrtc::Program::new("template <typename T> __global__ void scale(T* x) {}")
    ///     .name_expression("scale<float>");
    /// # let _ = p;
    /// ```
    pub fn name_expression(mut self, expression: impl Into<String>) -> Self {
        self.name_expressions.push(expression.into());
        self
    }

    /// Also takes the cubin (machine code for one real architecture, `sm_XY`; needs
    /// [`Program::arch`] with a real architecture, or [`Program::arch_for`] after this).
    ///
    /// ```
    /// let p = cudrv::nvrtc::Program::new("").cubin().arch("sm_90");
    /// # let _ = p;
    /// ```
    pub fn cubin(mut self) -> Self {
        self.cubin = true;
        self
    }

    /// Compiles even when cudrv's kernel cache holds this program, and does not store the
    /// result (by default a compiled program is kept there, see [`Program::compile`]).
    ///
    /// ```
    /// let p = cudrv::nvrtc::Program::new("").no_cache();
    /// # let _ = p;
    /// ```
    pub fn no_cache(mut self) -> Self {
        self.no_cache = true;
        self
    }

    /// The options given so far, in order (the CUDA include directories are added at compile
    /// time, after these, for a source that includes headers).
    ///
    /// ```
    /// let p = cudrv::nvrtc::Program::new("").option("-lineinfo");
    /// assert_eq!(p.options().len(), 1);
    /// ```
    pub fn options(&self) -> &[String] {
        &self.options
    }

    /// Runs NVRTC, or takes the result from cudrv's kernel cache ([`crate::kernel_cache`]:
    /// `$CUDRV_CACHE_DIR`, off with `CUDRV_CACHE_DISABLE=1`) when the same program (source, name,
    /// in-memory headers, options, name expressions, cubin or not) was compiled before on this
    /// machine; a hit needs no libnvrtc. A successful compile is stored. Headers read from disk
    /// are not part of the key: after changing one, `cudrv cache clear` (or
    /// [`Program::no_cache`]).
    ///
    /// ```no_run
    /// let compiled = cudrv::nvrtc::Program::new("extern \"C\" __global__ void k() {}")
    ///     .arch("compute_80")
    ///     .compile()?;
    /// assert!(compiled.ptx().contains(".entry k"));
    /// // A source that does not compile: the log is in the error.
    /// let err = cudrv::nvrtc::Program::new("__global__ void k() { nope; }").compile().unwrap_err();
    /// assert!(err.to_string().contains("nope"));
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn compile(&self) -> Result<Compiled> {
        // A hit is a hash and a look-up: nothing here reads the disk or loads libnvrtc before it.
        let cache = KernelCache::global();
        let key = (!self.no_cache && cache.enabled()).then(|| cache::key(self));
        if let Some(hit) = key.as_ref().and_then(|k| cache.get(k)).and_then(|b| cache::decode(&b)) {
            return Ok(hit);
        }
        let compiled = self.run_nvrtc()?;
        if let Some(key) = key {
            cache.put(&key, &cache::encode(&compiled));
        }
        Ok(compiled)
    }

    /// Creates the NVRTC program and compiles it.
    fn run_nvrtc(&self) -> Result<Compiled> {
        let invalid = |what: &str| Error::InvalidArgument(format!("nvrtc: {what} contains a NUL byte"));
        let source = CString::new(self.source.as_str()).map_err(|_| invalid("the source"))?;
        let name = self
            .name
            .as_deref()
            .map(CString::new)
            .transpose()
            .map_err(|_| invalid("the name"))?;
        let header_sources: Vec<CString> = self
            .headers
            .iter()
            .map(|(_, c)| CString::new(c.as_str()))
            .collect::<std::result::Result<_, _>>()
            .map_err(|_| invalid("a header"))?;
        let header_names: Vec<CString> = self
            .headers
            .iter()
            .map(|(n, _)| CString::new(n.as_str()))
            .collect::<std::result::Result<_, _>>()
            .map_err(|_| invalid("a header name"))?;
        let source_ptrs: Vec<*const c_char> = header_sources.iter().map(|c| c.as_ptr()).collect();
        let name_ptrs: Vec<*const c_char> = header_names.iter().map(|c| c.as_ptr()).collect();
        let lib = library()?;
        let mut options = self.options.clone();
        if headers::includes_headers(&self.source) {
            // After the program's own paths, so that those win (searched once libnvrtc is
            // loaded: its directory is one of the places).
            options.extend(
                cuda_include_dirs()
                    .iter()
                    .map(|d| format!("--include-path={}", d.display())),
            );
        }
        let mut handle: ProgramHandle = std::ptr::null_mut();
        // SAFETY: NUL-terminated source and name; `source_ptrs` and `name_ptrs` hold as many
        // valid strings as the count passed; `handle` receives the program.
        let rc = unsafe {
            (lib.create)(
                &mut handle,
                source.as_ptr(),
                name.as_ref().map_or(std::ptr::null(), |n| n.as_ptr()),
                source_ptrs.len() as c_int,
                if source_ptrs.is_empty() {
                    std::ptr::null()
                } else {
                    source_ptrs.as_ptr()
                },
                if name_ptrs.is_empty() {
                    std::ptr::null()
                } else {
                    name_ptrs.as_ptr()
                },
            )
        };
        check(rc, "nvrtcCreateProgram", &options)?;
        let program = Handle { lib, handle };
        program.compile(self, options)
    }
}

/// A live `nvrtcProgram`, destroyed on drop.
struct Handle {
    lib: &'static Library,
    handle: ProgramHandle,
}

impl Handle {
    fn compile(self, program: &Program, options: Vec<String>) -> Result<Compiled> {
        let lib = self.lib;
        let expressions: Vec<CString> = program
            .name_expressions
            .iter()
            .map(|e| CString::new(e.as_str()))
            .collect::<std::result::Result<_, _>>()
            .map_err(|_| Error::InvalidArgument("nvrtc: a name expression contains a NUL byte".into()))?;
        for e in &expressions {
            // SAFETY: a live program and a NUL-terminated expression.
            let rc = unsafe { (lib.add_name)(self.handle, e.as_ptr()) };
            check(rc, "nvrtcAddNameExpression", &options)?;
        }
        let c_options: Vec<CString> = options
            .iter()
            .map(|o| CString::new(o.as_str()))
            .collect::<std::result::Result<_, _>>()
            .map_err(|_| Error::InvalidArgument("nvrtc: an option contains a NUL byte".into()))?;
        let ptrs: Vec<*const c_char> = c_options.iter().map(|o| o.as_ptr()).collect();
        // SAFETY: a live program and `ptrs.len()` valid NUL-terminated options.
        let rc = unsafe { (lib.compile)(self.handle, ptrs.len() as c_int, ptrs.as_ptr()) };
        let log = self.log(&options)?;
        if rc != 0 {
            let hint = missing_header_hint(&log).unwrap_or_default();
            return Err(Error::Nvrtc {
                api: "nvrtcCompileProgram",
                code: rc,
                name: status_name(rc),
                options,
                log,
                hint,
            });
        }
        let ptx = self.text(lib.ptx_size, lib.ptx, "nvrtcGetPTX", &options)?;
        let cubin = if program.cubin {
            Some(self.text(lib.cubin_size, lib.cubin, "nvrtcGetCUBIN", &options)?)
        } else {
            None
        };
        let mut lowered = Vec::new();
        for (expression, c) in program.name_expressions.iter().zip(&expressions) {
            let mut out: *const c_char = std::ptr::null();
            // SAFETY: a compiled program, an expression added before compiling; NVRTC keeps the
            // returned string alive until the program is destroyed, and it is copied right away.
            let rc = unsafe { (lib.lowered)(self.handle, c.as_ptr(), &mut out) };
            check(rc, "nvrtcGetLoweredName", &options)?;
            // SAFETY: on success `out` is a NUL-terminated string owned by the program.
            let name = unsafe { CStr::from_ptr(out) }.to_string_lossy().into_owned();
            lowered.push((expression.clone(), name));
        }
        Ok(Compiled {
            ptx,
            cubin,
            log,
            lowered,
        })
    }

    /// The program's log (empty when NVRTC wrote none).
    fn log(&self, options: &[String]) -> Result<String> {
        let mut bytes = self.text(self.lib.log_size, self.lib.log, "nvrtcGetProgramLog", options)?;
        let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
        bytes.truncate(end);
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// The bytes of one of the program's outputs (PTX text with its NUL, a cubin, the log).
    fn text(
        &self,
        size_fn: unsafe extern "C" fn(ProgramHandle, *mut usize) -> c_int,
        text_fn: unsafe extern "C" fn(ProgramHandle, *mut c_char) -> c_int,
        api: &'static str,
        options: &[String],
    ) -> Result<Vec<u8>> {
        let mut size = 0usize;
        // SAFETY: writes one size_t for a live program.
        check(unsafe { size_fn(self.handle, &mut size) }, api, options)?;
        let mut bytes = vec![0u8; size.max(1)];
        // SAFETY: `bytes` has room for the `size` bytes NVRTC writes.
        check(unsafe { text_fn(self.handle, bytes.as_mut_ptr().cast()) }, api, options)?;
        bytes.truncate(size.max(1));
        Ok(bytes)
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: created by nvrtcCreateProgram and destroyed once, here.
        let _ = unsafe { (self.lib.destroy)(&mut self.handle) };
    }
}

fn check(rc: c_int, api: &'static str, options: &[String]) -> Result<()> {
    if rc == 0 {
        return Ok(());
    }
    Err(Error::Nvrtc {
        api,
        code: rc,
        name: status_name(rc),
        options: options.to_vec(),
        log: String::new(),
        hint: String::new(),
    })
}

/// What NVRTC made of a [`Program`]: its PTX, the cubin when asked for, the compiler's log
/// (warnings) and the lowered names.
///
/// ```no_run
/// let c = cudrv::nvrtc::Program::new("template <int N> __global__ void fill(int* x) { x[0] = N; }")
///     .name_expression("fill<3>")
///     .compile()?;
/// let mangled = c.lowered_name("fill<3>").unwrap();
/// assert!(c.ptx().contains(mangled));
/// # Ok::<(), cudrv::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Compiled {
    ptx: Vec<u8>,
    cubin: Option<Vec<u8>>,
    log: String,
    lowered: Vec<(String, String)>,
}

impl Compiled {
    /// The PTX text.
    ///
    /// ```no_run
    /// let c = cudrv::nvrtc::Program::new("extern \"C\" __global__ void k() {}").compile()?;
    /// assert!(c.ptx().starts_with("//"));
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn ptx(&self) -> &str {
        let end = self.ptx.iter().position(|&b| b == 0).unwrap_or(self.ptx.len());
        std::str::from_utf8(&self.ptx[..end]).unwrap_or("")
    }

    /// The PTX as NVRTC returned it, NUL-terminated (what `cuModuleLoadData` takes).
    ///
    /// ```no_run
    /// let c = cudrv::nvrtc::Program::new("extern \"C\" __global__ void k() {}").compile()?;
    /// assert_eq!(c.ptx_with_nul().last(), Some(&0));
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn ptx_with_nul(&self) -> &[u8] {
        &self.ptx
    }

    /// The cubin, when [`Program::cubin`] asked for it.
    ///
    /// ```no_run
    /// let c = cudrv::nvrtc::Program::new("extern \"C\" __global__ void k() {}")
    ///     .cubin()
    ///     .arch("sm_90")
    ///     .compile()?;
    /// assert!(c.cubin().unwrap().starts_with(b"\x7fELF"));
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn cubin(&self) -> Option<&[u8]> {
        self.cubin.as_deref()
    }

    /// The compiler's log of a successful compile (warnings; often empty).
    ///
    /// ```no_run
    /// let c = cudrv::nvrtc::Program::new("extern \"C\" __global__ void k() {}").compile()?;
    /// println!("{}", c.log());
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn log(&self) -> &str {
        &self.log
    }

    /// The lowered name of a name expression given to [`Program::name_expression`].
    ///
    /// ```no_run
    /// let c = cudrv::nvrtc::Program::new("__global__ void k() {}").name_expression("k").compile()?;
    /// assert_eq!(c.lowered_name("k"), Some("_Z1kv"));
    /// assert_eq!(c.lowered_name("other"), None);
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn lowered_name(&self, expression: &str) -> Option<&str> {
        self.lowered
            .iter()
            .find(|(e, _)| e == expression)
            .map(|(_, n)| n.as_str())
    }
}

/// The loaded NVRTC's version, `(major, minor)`.
///
/// ```no_run
/// let (major, minor) = cudrv::nvrtc::version()?;
/// assert!(major >= 12, "{major}.{minor}");
/// # Ok::<(), cudrv::Error>(())
/// ```
pub fn version() -> Result<(i32, i32)> {
    let lib = library()?;
    let (mut major, mut minor) = (0, 0);
    // SAFETY: writes two ints through valid pointers.
    check(unsafe { (lib.version)(&mut major, &mut minor) }, "nvrtcVersion", &[])?;
    Ok((major, minor))
}
