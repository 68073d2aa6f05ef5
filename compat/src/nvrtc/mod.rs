//! cudarc-shaped runtime compilation (`cudarc::nvrtc`): CUDA C++ to PTX through libnvrtc,
//! loaded at run time. The compiling is [`cudrv::nvrtc`]'s; this module keeps cudarc's types.
//!
//! The library is found the way cudrv finds libcuda: the first that loads of
//! `$CUDRV_LIBNVRTC` (a path), then `libnvrtc.so.13` / `libnvrtc.so.12` (the one matching the
//! driver's major version first), then `libnvrtc.so`. An absent library is
//! [`CompileError::LibraryNotFound`], never a panic.
//!
//! A source that `#include`s headers gets the CUDA include directories found on the machine
//! ([`cuda_include_dirs`]: `$CUDA_PATH`, `$CUDA_HOME`, `$CUDA_ROOT`, next to the loaded libnvrtc
//! including NVIDIA's wheel layout, `/usr/local/cuda`) after its own `include_paths`; a header
//! that is still not found is a [`CompileError::CompileError`] whose message says where it looked.
//!
//! ```no_run
//! use cudrv_compat::nvrtc::{compile_ptx_with_opts, CompileOptions};
//! let ptx = compile_ptx_with_opts(
//!     r#"extern "C" __global__ void twice(float *x, int n) {
//!         int i = blockIdx.x * blockDim.x + threadIdx.x;
//!         if (i < n) x[i] *= 2.0f;
//!     }"#,
//!     CompileOptions { arch: Some("compute_80"), ..Default::default() },
//! )?;
//! assert!(ptx.to_src().contains(".entry twice"));
//! # Ok::<(), cudrv_compat::nvrtc::CompileError>(())
//! ```

use std::ffi::CString;
use std::fmt;
use std::path::PathBuf;

/// Raw NVRTC types.
#[allow(non_camel_case_types)]
pub mod sys {
    /// NVRTC's status code (a newtype with the C enumerators as constants).
    ///
    /// ```
    /// use cudrv_compat::imp::nvrtc::sys::nvrtcResult;
    /// assert_eq!(nvrtcResult::NVRTC_ERROR_COMPILATION, nvrtcResult(6));
    /// ```
    #[repr(transparent)]
    #[derive(Debug, Copy, Clone, Hash, PartialEq, Eq)]
    pub struct nvrtcResult(pub u32);

    #[allow(missing_docs)]
    impl nvrtcResult {
        /// NVRTC status 0.
        ///
        /// ```
        /// use cudrv_compat::imp::nvrtc::sys::nvrtcResult;
        /// assert_eq!(nvrtcResult::NVRTC_SUCCESS.0, 0);
        /// ```
        pub const NVRTC_SUCCESS: nvrtcResult = nvrtcResult(0);
        /// NVRTC status 1.
        ///
        /// ```
        /// use cudrv_compat::imp::nvrtc::sys::nvrtcResult;
        /// assert_eq!(nvrtcResult::NVRTC_ERROR_OUT_OF_MEMORY.0, 1);
        /// ```
        pub const NVRTC_ERROR_OUT_OF_MEMORY: nvrtcResult = nvrtcResult(1);
        /// NVRTC status 2.
        ///
        /// ```
        /// use cudrv_compat::imp::nvrtc::sys::nvrtcResult;
        /// assert_eq!(nvrtcResult::NVRTC_ERROR_PROGRAM_CREATION_FAILURE.0, 2);
        /// ```
        pub const NVRTC_ERROR_PROGRAM_CREATION_FAILURE: nvrtcResult = nvrtcResult(2);
        /// NVRTC status 3.
        ///
        /// ```
        /// use cudrv_compat::imp::nvrtc::sys::nvrtcResult;
        /// assert_eq!(nvrtcResult::NVRTC_ERROR_INVALID_INPUT.0, 3);
        /// ```
        pub const NVRTC_ERROR_INVALID_INPUT: nvrtcResult = nvrtcResult(3);
        /// NVRTC status 4.
        ///
        /// ```
        /// use cudrv_compat::imp::nvrtc::sys::nvrtcResult;
        /// assert_eq!(nvrtcResult::NVRTC_ERROR_INVALID_PROGRAM.0, 4);
        /// ```
        pub const NVRTC_ERROR_INVALID_PROGRAM: nvrtcResult = nvrtcResult(4);
        /// NVRTC status 5.
        ///
        /// ```
        /// use cudrv_compat::imp::nvrtc::sys::nvrtcResult;
        /// assert_eq!(nvrtcResult::NVRTC_ERROR_INVALID_OPTION.0, 5);
        /// ```
        pub const NVRTC_ERROR_INVALID_OPTION: nvrtcResult = nvrtcResult(5);
        /// NVRTC status 6.
        ///
        /// ```
        /// use cudrv_compat::imp::nvrtc::sys::nvrtcResult;
        /// assert_eq!(nvrtcResult::NVRTC_ERROR_COMPILATION.0, 6);
        /// ```
        pub const NVRTC_ERROR_COMPILATION: nvrtcResult = nvrtcResult(6);
        /// NVRTC status 7.
        ///
        /// ```
        /// use cudrv_compat::imp::nvrtc::sys::nvrtcResult;
        /// assert_eq!(nvrtcResult::NVRTC_ERROR_BUILTIN_OPERATION_FAILURE.0, 7);
        /// ```
        pub const NVRTC_ERROR_BUILTIN_OPERATION_FAILURE: nvrtcResult = nvrtcResult(7);
        /// NVRTC status 8.
        ///
        /// ```
        /// use cudrv_compat::imp::nvrtc::sys::nvrtcResult;
        /// assert_eq!(nvrtcResult::NVRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION.0, 8);
        /// ```
        pub const NVRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION: nvrtcResult = nvrtcResult(8);
        /// NVRTC status 9.
        ///
        /// ```
        /// use cudrv_compat::imp::nvrtc::sys::nvrtcResult;
        /// assert_eq!(nvrtcResult::NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION.0, 9);
        /// ```
        pub const NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION: nvrtcResult = nvrtcResult(9);
        /// NVRTC status 10.
        ///
        /// ```
        /// use cudrv_compat::imp::nvrtc::sys::nvrtcResult;
        /// assert_eq!(nvrtcResult::NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID.0, 10);
        /// ```
        pub const NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID: nvrtcResult = nvrtcResult(10);
        /// NVRTC status 11.
        ///
        /// ```
        /// use cudrv_compat::imp::nvrtc::sys::nvrtcResult;
        /// assert_eq!(nvrtcResult::NVRTC_ERROR_INTERNAL_ERROR.0, 11);
        /// ```
        pub const NVRTC_ERROR_INTERNAL_ERROR: nvrtcResult = nvrtcResult(11);
    }

    /// An opaque NVRTC program handle.
    ///
    /// ```
    /// let none: cudrv_compat::imp::nvrtc::sys::nvrtcProgram = std::ptr::null_mut();
    /// assert!(none.is_null());
    /// ```
    pub type nvrtcProgram = *mut std::ffi::c_void;
}

/// cudarc's `nvrtc::result` path for the error type.
pub mod result {
    use super::sys;
    use std::fmt;

    /// A failed NVRTC call.
    ///
    /// ```
    /// use cudrv_compat::imp::nvrtc::{result::NvrtcError, sys::nvrtcResult};
    /// let e = NvrtcError(nvrtcResult::NVRTC_ERROR_COMPILATION);
    /// println!("{e:?}");
    /// ```
    #[derive(Clone, Copy, PartialEq, Eq, Debug)]
    pub struct NvrtcError(pub sys::nvrtcResult);

    impl fmt::Display for NvrtcError {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "NvrtcError({})", self.0 .0)
        }
    }

    impl std::error::Error for NvrtcError {}
}

pub use cudrv::nvrtc::cuda_include_dirs;

use result::NvrtcError;
use sys::nvrtcResult;

/// Compiled PTX, PTX source, a PTX file, or a cubin image (cudarc's `Ptx`); load it with
/// [`CudaContext::load_module`](crate::imp::driver::CudaContext::load_module).
///
/// ```no_run
/// # use cudrv_compat::imp::driver::*;
/// # let ctx = CudaContext::new(0)?;
/// # let stream = ctx.default_stream();
/// use cudrv_compat::imp::nvrtc::{compile_ptx, Ptx};
/// let from_nvrtc: Ptx = compile_ptx("extern \"C\" __global__ void k() {}")?;
/// let from_file = Ptx::from_file("kernels.ptx");
/// ctx.load_module(from_nvrtc)?;
/// ctx.load_module(from_file)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct Ptx(pub(crate) PtxKind);

#[derive(Debug, Clone)]
pub(crate) enum PtxKind {
    /// NVRTC's output, NUL-terminated.
    Image(Vec<u8>),
    /// PTX text.
    Src(String),
    /// A PTX (or cubin) file read when loaded.
    File(PathBuf),
    /// A cubin.
    Binary(Vec<u8>),
}

impl Ptx {
    /// PTX to be read from `path` when the module is loaded.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let module = ctx.load_module(cudrv_compat::imp::nvrtc::Ptx::from_file("target/kernels.ptx"))?; // read at load
    /// # drop(module);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_file<P: Into<PathBuf>>(path: P) -> Self {
        Ptx(PtxKind::File(path.into()))
    }

    /// PTX text.
    ///
    /// ```
    /// use cudrv_compat::imp::nvrtc::Ptx;
    /// let ptx = Ptx::from_src(".version 8.0\n.target sm_80\n.address_size 64\n");
    /// assert!(ptx.to_src().starts_with(".version"));
    /// ```
    pub fn from_src<S: Into<String>>(src: S) -> Self {
        Ptx(PtxKind::Src(src.into()))
    }

    /// A cubin image.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let cubin = std::fs::read("kernels.sm_90.cubin")?;
    /// let module = ctx.load_module(cudrv_compat::imp::nvrtc::Ptx::from_binary(cubin))?;
    /// # drop(module);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_binary(data: Vec<u8>) -> Self {
        Ptx(PtxKind::Binary(data))
    }

    /// The PTX text.
    ///
    /// # Panics
    /// For a cubin, or a file that cannot be read (as in cudarc).
    ///
    /// ```
    /// let ptx = cudrv_compat::imp::nvrtc::Ptx::from_src("// ptx");
    /// assert_eq!(ptx.to_src(), "// ptx");
    /// ```
    pub fn to_src(&self) -> String {
        match &self.0 {
            PtxKind::Image(bytes) => {
                let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
                String::from_utf8_lossy(&bytes[..end]).into_owned()
            }
            PtxKind::Src(src) => src.clone(),
            PtxKind::File(path) => {
                std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read PTX file {}: {e}", path.display()))
            }
            PtxKind::Binary(_) => panic!("a cubin has no PTX source; use from_src or from_file for PTX"),
        }
    }

    /// The compiled image's bytes (with its NUL), for PTX from NVRTC.
    ///
    /// ```
    /// let ptx = cudrv_compat::imp::nvrtc::Ptx::from_src("// ptx");
    /// assert!(ptx.as_bytes().is_none()); // only NVRTC's output carries bytes
    /// ```
    pub fn as_bytes(&self) -> Option<&[u8]> {
        match &self.0 {
            PtxKind::Image(bytes) => Some(bytes),
            _ => None,
        }
    }
}

impl<S: Into<String>> From<S> for Ptx {
    fn from(value: S) -> Self {
        Ptx::from_src(value)
    }
}

/// Why a compilation failed (cudarc's `CompileError`, plus [`LibraryNotFound`](Self::LibraryNotFound)).
///
/// ```
/// use cudrv_compat::imp::nvrtc::{compile_ptx, CompileError};
/// match compile_ptx("__global__ void k() { this is not C++ }") {
///     Err(CompileError::CompileError { log, .. }) => eprintln!("{}", log.to_string_lossy()),
///     Err(CompileError::LibraryNotFound { .. }) => eprintln!("no libnvrtc on this machine"),
///     other => println!("{other:?}"),
/// }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompileError {
    /// Creating the program failed (also: source or name containing a NUL byte).
    CreationError(NvrtcError),
    /// The compiler rejected the program; `log` says why.
    CompileError {
        /// NVRTC's status.
        nvrtc: NvrtcError,
        /// The options passed to the compiler.
        options: Vec<String>,
        /// The compiler's log.
        log: CString,
    },
    /// Reading the log failed.
    GetLogError(NvrtcError),
    /// Reading the PTX failed.
    GetPtxError(NvrtcError),
    /// Destroying the program failed.
    DestroyError(NvrtcError),
    /// No usable libnvrtc could be loaded (compat only: cudarc panics here).
    LibraryNotFound {
        /// The candidates tried, in order.
        tried: String,
        /// The loader's message for the last candidate, or the missing symbol.
        reason: String,
    },
}

impl fmt::Display for CompileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CompileError::CompileError { nvrtc, options, log } => {
                let log = log.to_string_lossy();
                write!(f, "nvrtc compilation failed ({nvrtc}) with options {options:?}:\n{log}")?;
                match cudrv::nvrtc::missing_header_hint(&log) {
                    Some(hint) => write!(f, "\n{hint}"),
                    None => Ok(()),
                }
            }
            CompileError::LibraryNotFound { tried, reason } => {
                write!(
                    f,
                    "libnvrtc not found: tried {tried} ({reason}); set CUDRV_LIBNVRTC to its path"
                )
            }
            other => write!(f, "{other:?}"),
        }
    }
}

impl std::error::Error for CompileError {}

/// Options for [`compile_ptx_with_opts`] (the same public fields as cudarc's).
///
/// ```no_run
/// use cudrv_compat::imp::nvrtc::{compile_ptx_with_opts, CompileOptions};
/// let opts = CompileOptions { arch: Some("compute_90"), use_fast_math: Some(true), ..Default::default() };
/// let ptx = compile_ptx_with_opts("extern \"C\" __global__ void k(float* x) { x[0] = __expf(x[0]); }", opts)?;
/// # let _ = ptx;
/// # Ok::<(), cudrv_compat::imp::nvrtc::CompileError>(())
/// ```
#[derive(Clone, Debug, Default, Hash, PartialEq, Eq)]
pub struct CompileOptions {
    /// `--ftz`: flush denormals to zero.
    pub ftz: Option<bool>,
    /// `--prec-sqrt`: IEEE square root.
    pub prec_sqrt: Option<bool>,
    /// `--prec-div`: IEEE division.
    pub prec_div: Option<bool>,
    /// `--fmad`: contract multiply-adds.
    pub fmad: Option<bool>,
    /// Further options, passed as given.
    pub options: Vec<String>,
    /// `--use_fast_math` (cudarc 0.19 passes `--fmad=true` for this; see MIGRATING.md).
    pub use_fast_math: Option<bool>,
    /// `--maxrregcount`.
    pub maxrregcount: Option<usize>,
    /// `--include-path` entries.
    pub include_paths: Vec<String>,
    /// `--gpu-architecture`, e.g. `"compute_80"`.
    pub arch: Option<&'static str>,
    /// The program's name in messages.
    pub name: Option<String>,
}

impl CompileOptions {
    /// The command-line options these settings stand for, in cudarc's order.
    ///
    /// ```
    /// let opts = cudrv_compat::imp::nvrtc::CompileOptions { prec_div: Some(false), maxrregcount: Some(60), ..Default::default() };
    /// assert_eq!(opts.build(), ["--prec-div=false", "--maxrregcount=60"]);
    /// ```
    pub fn build(&self) -> Vec<String> {
        let mut out = Vec::new();
        let flags = [
            ("--ftz", self.ftz),
            ("--prec-sqrt", self.prec_sqrt),
            ("--prec-div", self.prec_div),
            ("--fmad", self.fmad),
        ];
        for (name, value) in flags {
            if let Some(v) = value {
                out.push(format!("{name}={v}"));
            }
        }
        if self.use_fast_math == Some(true) {
            out.push("--use_fast_math".to_string());
        }
        if let Some(n) = self.maxrregcount {
            out.push(format!("--maxrregcount={n}"));
        }
        out.extend(self.include_paths.iter().map(|p| format!("--include-path={p}")));
        if let Some(arch) = self.arch {
            out.push(format!("--gpu-architecture={arch}"));
        }
        out.extend(self.options.iter().cloned());
        out
    }
}

/// Compiles CUDA C++ source to PTX with default options.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::*;
/// # use std::sync::Arc;
/// # let ctx = CudaContext::new(0)?;
/// # let stream = ctx.default_stream();
/// let ptx = cudrv_compat::imp::nvrtc::compile_ptx("extern \"C\" __global__ void one(float* x) { x[threadIdx.x] = 1.0f; }")?;
/// let f = ctx.load_module(ptx)?.load_function("one")?;
/// # let _ = f;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn compile_ptx<S: AsRef<str>>(src: S) -> Result<Ptx, CompileError> {
    compile_ptx_with_opts(src, Default::default())
}

/// Compiles CUDA C++ source to PTX.
///
/// ```no_run
/// use cudrv_compat::imp::nvrtc::{compile_ptx_with_opts, CompileOptions};
/// let include_paths = cudrv_compat::imp::nvrtc::cuda_include_dirs().iter().map(|p| p.display().to_string()).collect();
/// let opts = CompileOptions { include_paths, ..Default::default() };
/// let ptx = compile_ptx_with_opts("#include <cuda_fp16.h>\nextern \"C\" __global__ void k(__half* x) { x[0] = __float2half(1.0f); }", opts)?;
/// # let _ = ptx;
/// # Ok::<(), cudrv_compat::imp::nvrtc::CompileError>(())
/// ```
pub fn compile_ptx_with_opts<S: AsRef<str>>(src: S, opts: CompileOptions) -> Result<Ptx, CompileError> {
    let mut program = cudrv::nvrtc::Program::new(src.as_ref());
    if let Some(name) = &opts.name {
        program = program.name(name.as_str());
    }
    for option in opts.build() {
        program = program.option(option);
    }
    let compiled = program.compile().map_err(compile_error)?;
    Ok(Ptx(PtxKind::Image(compiled.ptx_with_nul().to_vec())))
}

/// cudarc's error for a failure of [`cudrv::nvrtc`].
fn compile_error(e: cudrv::Error) -> CompileError {
    let status = |code: i32| NvrtcError(nvrtcResult(code as u32));
    match e {
        cudrv::Error::NoLibrary { tried, reason, .. } => CompileError::LibraryNotFound { tried, reason },
        cudrv::Error::Nvrtc {
            api: "nvrtcCompileProgram",
            code,
            options,
            log,
            ..
        } => CompileError::CompileError {
            nvrtc: status(code),
            options,
            log: CString::new(log.replace('\0', "")).unwrap_or_default(),
        },
        cudrv::Error::Nvrtc {
            api: "nvrtcGetProgramLog",
            code,
            ..
        } => CompileError::GetLogError(status(code)),
        cudrv::Error::Nvrtc {
            api: "nvrtcGetPTX",
            code,
            ..
        } => CompileError::GetPtxError(status(code)),
        cudrv::Error::Nvrtc { code, .. } => CompileError::CreationError(status(code)),
        // A NUL byte in the source, the name or an option.
        _ => CompileError::CreationError(NvrtcError(nvrtcResult::NVRTC_ERROR_INVALID_INPUT)),
    }
}

/// The NVRTC version of the loaded library, (major, minor).
///
/// ```no_run
/// let (major, minor) = cudrv_compat::imp::nvrtc::version()?;
/// println!("NVRTC {major}.{minor}");
/// # Ok::<(), cudrv_compat::imp::nvrtc::CompileError>(())
/// ```
pub fn version() -> Result<(i32, i32), CompileError> {
    cudrv::nvrtc::version().map_err(compile_error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_build_in_cudarc_order() {
        assert!(CompileOptions::default().build().is_empty());
        let o = CompileOptions {
            ftz: Some(true),
            arch: Some("compute_80"),
            include_paths: vec!["/x".into()],
            options: vec!["-lineinfo".into()],
            ..Default::default()
        };
        assert_eq!(
            o.build(),
            [
                "--ftz=true",
                "--include-path=/x",
                "--gpu-architecture=compute_80",
                "-lineinfo"
            ]
        );
    }

    #[test]
    fn a_missing_library_is_cudarcs_error() {
        let e = compile_error(cudrv::Error::NoLibrary {
            library: "libnvrtc",
            tried: "/nonexistent/libnvrtc.so.13".into(),
            reason: "not found; set CUDRV_LIBNVRTC to its path".into(),
        });
        assert!(matches!(&e, CompileError::LibraryNotFound { tried, .. } if tried.contains("/nonexistent")));
        assert!(e.to_string().contains("CUDRV_LIBNVRTC"), "{e}");
    }

    #[test]
    fn a_compile_failure_keeps_its_log_and_options() {
        let e = compile_error(cudrv::Error::Nvrtc {
            api: "nvrtcCompileProgram",
            code: 6,
            name: "NVRTC_ERROR_COMPILATION",
            options: vec!["--fmad=false".into()],
            log: "error: identifier \"nope\" is undefined".into(),
            hint: String::new(),
        });
        let CompileError::CompileError { nvrtc, options, log } = e else {
            panic!("not a compile error");
        };
        assert_eq!(nvrtc, NvrtcError(nvrtcResult::NVRTC_ERROR_COMPILATION));
        assert_eq!(options, ["--fmad=false"]);
        assert!(log.to_string_lossy().contains("nope"));
    }

    #[test]
    fn ptx_from_str_round_trips() {
        let p: Ptx = "abc".into();
        assert_eq!(p.to_src(), "abc");
        assert!(p.as_bytes().is_none());
        let img = Ptx(PtxKind::Image(b"xyz\0".to_vec()));
        assert_eq!(img.to_src(), "xyz");
    }
}
