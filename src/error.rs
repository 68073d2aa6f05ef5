//! The crate's error type.

use std::fmt;

/// The result type of every fallible cudrv call.
///
/// ```no_run
/// fn total_memory_gib() -> cudrv::Result<usize> {
///     Ok(cudrv::Device::get(0)?.total_memory()? >> 30)
/// }
/// match total_memory_gib() {
///     Ok(g) => println!("{g} GiB"),
///     Err(e) => eprintln!("no GPU: {e}"), // e.g. no driver: one clear line, no panic
/// }
/// ```
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in cudrv.
///
/// Variants carry what a person needs to act on the failure: the API that failed, the driver's
/// code, name and message, or the numbers that made an argument invalid.
///
/// ```
/// let err = cudrv::Error::InvalidArgument("length 3 != 4".into());
/// assert_eq!(err.to_string(), "invalid argument: length 3 != 4");
/// ```
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No CUDA driver library could be loaded.
    #[error("no CUDA driver found: could not load {tried} ({reason})")]
    NoDriver {
        /// The library names or paths that were tried, in order.
        tried: String,
        /// The loader's message for the last candidate.
        reason: String,
    },
    /// The loaded driver lacks an entry point (it is older than the call needs).
    #[error("the CUDA driver {library} has no entry point `{name}` (this call needs a newer driver)")]
    MissingSymbol {
        /// The symbol, e.g. `cuMemAllocAsync`.
        name: &'static str,
        /// The path of the driver library that was searched.
        library: String,
    },
    /// A driver API call returned an error code.
    #[error("{api} failed: {name} ({code}): {message}")]
    Driver {
        /// The driver entry point that failed.
        api: &'static str,
        /// The numeric `CUresult`.
        code: u32,
        /// The code's name, e.g. `CUDA_ERROR_INVALID_VALUE`.
        name: String,
        /// The driver's description of the code.
        message: String,
    },
    /// Loading a module (PTX, cubin, fatbin) failed; `log` holds the JIT compiler's error log.
    #[error("loading module `{module}` failed: {name} ({code}): {message}{}", suffix("\nJIT log:\n", .log))]
    ModuleLoad {
        /// The module's name (kernel-registry name, file path, or `<memory>`).
        module: String,
        /// The numeric `CUresult`.
        code: u32,
        /// The code's name, e.g. `CUDA_ERROR_UNSUPPORTED_PTX_VERSION`.
        name: String,
        /// The driver's description of the code, with a hint where one helps.
        message: String,
        /// The JIT error log (empty if the driver wrote none).
        log: String,
    },
    /// An argument was rejected before any work was queued.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// A launch configuration exceeds the device's or the kernel's limits.
    #[error("invalid launch configuration: {0}")]
    InvalidLaunch(String),
    /// A kernel name that no registered module provides.
    #[error("unknown kernel `{name}`; known kernels: {}", known_list(.known))]
    UnknownKernel {
        /// The name asked for.
        name: String,
        /// The names the registry has, sorted.
        known: Vec<String>,
    },
    /// A device allocation failed even after the cache was emptied.
    #[error(
        "out of device memory: requested {requested} bytes; pool reserved {reserved}, allocated {allocated}, \
         cached {cached}; device free {device_free} bytes"
    )]
    OutOfMemory {
        /// Bytes asked for.
        requested: usize,
        /// Bytes the pool holds from the driver.
        reserved: usize,
        /// Bytes in live buffers.
        allocated: usize,
        /// Bytes held free in the cache.
        cached: usize,
        /// Free device memory reported by the driver after the failure.
        device_free: usize,
    },
    /// The allocator failed for a reason other than running out of memory.
    #[error("allocating {requested} bytes failed: {message}")]
    AllocationFailed {
        /// Bytes asked for.
        requested: usize,
        /// What failed.
        message: String,
    },
    /// The context hit a sticky fault earlier (an illegal address, a trap, a device-side assert,
    /// ...): CUDA keeps every later call in it failing, so cudrv refuses them up front. The
    /// process (or the worker that owns the GPU) must restart; see [`crate::fault`].
    #[error("the CUDA context is unusable after an earlier fault ({fault}); restart the process to use the GPU again")]
    ContextFaulted {
        /// The first sticky error the context returned.
        fault: Box<Error>,
    },
    /// A wait with a deadline ran out; the work it waited for is still queued or running.
    #[error("{what} did not finish within {waited_ms} ms (the work is still running)")]
    Timeout {
        /// What was waited for.
        what: String,
        /// The deadline, milliseconds.
        waited_ms: u64,
    },
    /// An optional system library (libnvrtc, ...) could not be loaded; only the calls that need it
    /// fail.
    #[error("{library} not found: tried {tried} ({reason})")]
    NoLibrary {
        /// The library, e.g. `libnvrtc`.
        library: &'static str,
        /// The names or paths that were tried, in order.
        tried: String,
        /// The loader's message for the last candidate, and how to point cudrv at the library.
        reason: String,
    },
    /// An NVRTC call failed; for `nvrtcCompileProgram`, `log` holds the compiler's messages.
    #[error("{api} failed: {name} ({code}) with options {options:?}{}{}", suffix(":\n", .log), suffix("\n", .hint))]
    Nvrtc {
        /// The NVRTC entry point that failed.
        api: &'static str,
        /// The numeric `nvrtcResult`.
        code: i32,
        /// The code's name, e.g. `NVRTC_ERROR_COMPILATION`.
        name: &'static str,
        /// The options the program was compiled with.
        options: Vec<String>,
        /// The compiler's log (empty for the other calls).
        log: String,
        /// What to do about it, where cudrv knows (a header not found: where it looked); empty
        /// otherwise.
        hint: String,
    },
    /// Recording work into a graph failed; the capture was ended and discarded and the stream is
    /// usable again. `reason` says what the driver's capture error means.
    #[error("graph capture failed while {what}: {reason}{}", source_suffix(.source))]
    Capture {
        /// The step that failed: "the closure's work", "ending the capture", ...
        what: String,
        /// What went wrong, in words.
        reason: String,
        /// The error the failing call returned, if one did.
        source: Option<Box<Error>>,
    },
    /// Reading a file (a PTX or cubin module, a kernel directory) failed.
    #[error("cannot read {path}: {message}")]
    Io {
        /// The path that was read.
        path: String,
        /// The operating system's message.
        message: String,
    },
}

fn known_list(known: &[String]) -> String {
    if known.is_empty() {
        "(none)".into()
    } else {
        known.join(", ")
    }
}

/// " (cause: ...)" for an error that wraps another, or nothing.
fn source_suffix(source: &Option<Box<Error>>) -> String {
    source.as_ref().map(|e| format!(" (cause: {e})")).unwrap_or_default()
}

/// `text` (trailing whitespace dropped) after `prefix`, or nothing when `text` is blank: the
/// optional tail of a message (a compiler log, a hint).
fn suffix(prefix: &str, text: &str) -> String {
    if text.trim().is_empty() {
        String::new()
    } else {
        format!("{prefix}{}", text.trim_end())
    }
}

impl Error {
    /// The driver's `CUresult` code, for errors that came from the driver.
    ///
    /// ```
    /// let err = cudrv::Error::InvalidArgument("x".into());
    /// assert_eq!(err.driver_code(), None);
    /// ```
    pub fn driver_code(&self) -> Option<u32> {
        match self {
            Error::Driver { code, .. } | Error::ModuleLoad { code, .. } => Some(*code),
            Error::ContextFaulted { fault } => fault.driver_code(),
            Error::Capture { source: Some(e), .. } => e.driver_code(),
            _ => None,
        }
    }

    /// Whether this error leaves the context unusable for the rest of the process (a sticky
    /// fault, or a call refused because of one): the process or worker must restart.
    ///
    /// ```
    /// let fault = cudrv::Error::Driver {
    ///     api: "cuStreamSynchronize",
    ///     code: 700,
    ///     name: "CUDA_ERROR_ILLEGAL_ADDRESS".into(),
    ///     message: "an illegal memory access was encountered".into(),
    /// };
    /// assert!(fault.is_sticky());
    /// assert!(!cudrv::Error::InvalidArgument("x".into()).is_sticky());
    /// ```
    pub fn is_sticky(&self) -> bool {
        match self {
            Error::Driver { code, .. } => crate::fault::is_sticky_code(*code),
            Error::ContextFaulted { .. } => true,
            _ => false,
        }
    }
}

impl From<crate::sys::LoadError> for Error {
    fn from(e: crate::sys::LoadError) -> Self {
        match e {
            crate::sys::LoadError::NoDriver { tried, reason } => Error::NoDriver { tried, reason },
            crate::sys::LoadError::MissingSymbol { name, library } => Error::MissingSymbol { name, library },
        }
    }
}

/// A short helper to build [`Error::InvalidArgument`] from format arguments.
pub(crate) fn invalid(args: fmt::Arguments<'_>) -> Error {
    Error::InvalidArgument(args.to_string())
}

/// `return Err(Error::InvalidArgument(format!(...)))`.
macro_rules! bail_invalid {
    ($($arg:tt)*) => { return Err($crate::error::invalid(format_args!($($arg)*))) };
}
pub(crate) use bail_invalid;
