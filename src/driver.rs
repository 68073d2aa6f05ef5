//! Driver initialisation, version, and the `CUresult` to [`Error`] mapping.

use std::ffi::CStr;
use std::fmt;

use once_cell::sync::OnceCell;

use crate::error::{Error, Result};
use crate::sys::{self, CUresult};

/// Calls a driver entry point through the lazily resolved table and maps its `CUresult`.
///
/// Expands to an unsafe call: use it inside an `unsafe` block whose `SAFETY` comment covers the
/// arguments. A missing entry point yields [`Error::MissingSymbol`] from this call only.
macro_rules! cu {
    ($name:ident($($arg:expr),* $(,)?)) => {
        match $crate::sys::resolve::$name() {
            Ok(function) => $crate::driver::check(function($($arg),*), stringify!($name)),
            Err(e) => Err($crate::Error::from(e)),
        }
    };
}
pub(crate) use cu;

/// Maps a `CUresult` to `Ok(())` or an [`Error::Driver`] naming `api`.
#[inline]
pub(crate) fn check(code: CUresult, api: &'static str) -> Result<()> {
    if code == CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(driver_error(code, api))
    }
}

/// Builds the [`Error::Driver`] for a failed call, with the driver's name and text for the code.
#[cold]
pub(crate) fn driver_error(code: CUresult, api: &'static str) -> Error {
    let (name, message) = describe(code);
    let err = Error::Driver {
        api,
        code: code.0,
        name,
        message,
    };
    if crate::fault::is_sticky_code(code.0) {
        crate::fault::record(&err);
    }
    err
}

/// The driver's name and description of a code, or a placeholder when the driver cannot say.
pub(crate) fn describe(code: CUresult) -> (String, String) {
    let text = |f: unsafe extern "C" fn(CUresult, *mut *const std::ffi::c_char) -> CUresult| {
        let mut ptr = std::ptr::null();
        // SAFETY: cuGetErrorName/cuGetErrorString write a pointer to a static NUL-terminated
        // string on success and leave it untouched otherwise.
        let rc = unsafe { f(code, &mut ptr) };
        (rc == CUresult::CUDA_SUCCESS && !ptr.is_null())
            // SAFETY: checked non-null above; the driver's strings are static and NUL-terminated.
            .then(|| unsafe { CStr::from_ptr(ptr) }.to_string_lossy().into_owned())
    };
    let name = sys::resolve::cuGetErrorName().ok().and_then(text);
    let message = sys::resolve::cuGetErrorString().ok().and_then(text);
    (
        name.unwrap_or_else(|| format!("CUresult {}", code.0)),
        message.unwrap_or_else(|| "unrecognized error code".to_string()),
    )
}

/// Initialises the driver (`cuInit(0)`) once per process; later calls return the first result.
///
/// Every cudrv entry point that needs the driver calls this first.
///
/// ```no_run
/// cudrv::driver::init()?;
/// # Ok::<(), cudrv::Error>(())
/// ```
pub fn init() -> Result<()> {
    static INIT: OnceCell<Result<()>> = OnceCell::new();
    INIT.get_or_init(|| {
        // SAFETY: cuInit takes only a flags word, which must be 0.
        unsafe { cu!(cuInit(0)) }
    })
    .clone()
}

/// The CUDA version the installed driver supports, as `cuDriverGetVersion` reports it.
///
/// ```
/// let v = cudrv::driver::DriverVersion(12090);
/// assert_eq!((v.major(), v.minor()), (12, 9));
/// assert_eq!(v.to_string(), "12.9");
/// ```
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct DriverVersion(pub i32);

impl DriverVersion {
    /// The major version (12 for CUDA 12.x).
    ///
    /// ```no_run
    /// let v = cudrv::driver_version()?;
    /// assert!(v.major() >= 12, "cudrv needs a CUDA 12 driver or newer, found {v}");
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn major(self) -> i32 {
        self.0 / 1000
    }
    /// The minor version (9 for CUDA 12.9).
    ///
    /// ```no_run
    /// let v = cudrv::driver_version()?;
    /// if (v.major(), v.minor()) >= (12, 4) {
    ///     println!("kernel parameter sizes are checked");
    /// }
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn minor(self) -> i32 {
        (self.0 % 1000) / 10
    }
}

impl fmt::Display for DriverVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major(), self.minor())
    }
}

/// The CUDA version supported by the installed driver.
///
/// ```no_run
/// println!("driver supports CUDA {}", cudrv::driver::driver_version()?);
/// # Ok::<(), cudrv::Error>(())
/// ```
pub fn driver_version() -> Result<DriverVersion> {
    let mut version = 0;
    // SAFETY: writes one int through a valid pointer; needs no cuInit.
    unsafe { cu!(cuDriverGetVersion(&mut version))? };
    Ok(DriverVersion(version))
}

/// Whether the driver is recording `stream`'s work into a graph (`cuStreamIsCapturing`: covers
/// captures begun outside cudrv). A stream the driver cannot answer for counts as not capturing.
pub(crate) fn stream_capturing(stream: sys::CUstream) -> bool {
    let mut status = sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
    // SAFETY: writes one enum through a valid pointer; the caller passes a live stream handle.
    let code = unsafe { sys::cuStreamIsCapturing(stream, &mut status) };
    code == CUresult::CUDA_SUCCESS && status != sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE
}
