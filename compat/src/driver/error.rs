//! [`DriverError`]: cudarc's tuple struct around a `CUresult`, with cudrv's message kept.

use std::cell::RefCell;
use std::ffi::CStr;
use std::fmt;

use super::sys::CUresult;

thread_local! {
    /// The full message of the last cudrv error converted on this thread, with its code.
    static DETAIL: RefCell<Option<(u32, String)>> = const { RefCell::new(None) };
}

/// A failed driver call: the `CUresult` code, as in cudarc.
///
/// cudrv's errors are richer (the API that failed, a missing symbol's name, the numbers that made
/// an argument invalid). They map onto codes as follows, and the full message of the most recent
/// conversion on the calling thread stays available through [`DriverError::detail`] and `Display`:
///
/// | cudrv error | code |
/// |---|---|
/// | driver call failed / module load failed | the driver's code |
/// | missing driver entry point, unknown kernel | `CUDA_ERROR_NOT_FOUND` |
/// | no driver library | `CUDA_ERROR_NO_DEVICE` |
/// | invalid argument / launch configuration | `CUDA_ERROR_INVALID_VALUE` |
/// | out of memory, allocation failed | `CUDA_ERROR_OUT_OF_MEMORY` |
/// | unreadable file | `CUDA_ERROR_FILE_NOT_FOUND` |
///
/// ```
/// use cudrv_compat::imp::driver::{sys, DriverError}; // cudrv-compat's own type, under any feature
/// let e = DriverError::from_cudrv(cudrv::Error::InvalidArgument("3 != 4".into()));
/// assert_eq!(e, DriverError(sys::CUresult::CUDA_ERROR_INVALID_VALUE));
/// assert!(e.to_string().contains("3 != 4"));
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct DriverError(pub CUresult);

impl DriverError {
    /// The driver's name for the code (`CUDA_ERROR_...`).
    ///
    /// ```
    /// use cudrv_compat::imp::driver::{sys, DriverError};
    /// let e = DriverError(sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY);
    /// println!("{:?}", e.error_name());
    /// ```
    pub fn error_name(&self) -> Result<&CStr, DriverError> {
        let f = cudrv::sys::resolve::cuGetErrorName().map_err(|_| DriverError(CUresult::CUDA_ERROR_NOT_FOUND))?;
        describe(self.0.into(), f)
    }

    /// The driver's description of the code.
    ///
    /// ```
    /// use cudrv_compat::imp::driver::{sys, DriverError};
    /// let e = DriverError(sys::CUresult::CUDA_ERROR_INVALID_VALUE);
    /// if let Ok(text) = e.error_string() {
    ///     println!("{}", text.to_string_lossy());
    /// }
    /// ```
    pub fn error_string(&self) -> Result<&CStr, DriverError> {
        let f = cudrv::sys::resolve::cuGetErrorString().map_err(|_| DriverError(CUresult::CUDA_ERROR_NOT_FOUND))?;
        describe(self.0.into(), f)
    }

    /// cudrv's full message for this error, when the most recent error converted from cudrv on
    /// this thread had this code (for example the name of a missing driver entry point).
    ///
    /// ```
    /// use cudrv_compat::imp::driver::{sys, DriverError};
    /// let e = DriverError(sys::CUresult::CUDA_ERROR_INVALID_VALUE);
    /// println!("{e}: {:?}", e.detail());
    /// ```
    pub fn detail(&self) -> Option<String> {
        DETAIL.with(|d| match &*d.borrow() {
            Some((code, msg)) if *code == self.0 as u32 => Some(msg.clone()),
            _ => None,
        })
    }

    /// An error with `code` whose [`detail`](Self::detail) is `message`.
    pub(crate) fn with_detail(code: CUresult, message: String) -> Self {
        DETAIL.with(|d| *d.borrow_mut() = Some((code as u32, message)));
        DriverError(code)
    }
}

/// Calls cuGetErrorName / cuGetErrorString (resolved without touching the error detail).
fn describe(
    code: cudrv::sys::CUresult,
    f: unsafe extern "C" fn(cudrv::sys::CUresult, *mut *const std::ffi::c_char) -> cudrv::sys::CUresult,
) -> Result<&'static CStr, DriverError> {
    let mut ptr = std::ptr::null();
    // SAFETY: on success the driver writes a pointer to a static NUL-terminated string.
    let rc = unsafe { f(code, &mut ptr) };
    check(CUresult::from_raw(rc.0).unwrap_or(CUresult::CUDA_ERROR_UNKNOWN))?;
    if ptr.is_null() {
        return Err(DriverError(CUresult::CUDA_ERROR_INVALID_VALUE));
    }
    // SAFETY: checked non-null; the driver's strings are static and NUL-terminated.
    Ok(unsafe { CStr::from_ptr(ptr) })
}

/// `.drv()?` in place of `?` on a cudrv result inside this crate.
pub(crate) trait IntoDriver<T> {
    /// The result with its error mapped by [`DriverError::from_cudrv`].
    fn drv(self) -> Result<T, DriverError>;
}

impl<T> IntoDriver<T> for Result<T, cudrv::Error> {
    #[inline]
    fn drv(self) -> Result<T, DriverError> {
        self.map_err(DriverError::from_cudrv)
    }
}

/// Maps a `CUresult` to `Ok(())` or a [`DriverError`].
///
/// ```
/// use cudrv_compat::imp::driver::{check, sys};
/// assert!(check(sys::CUresult::CUDA_SUCCESS).is_ok());
/// assert!(check(sys::CUresult::CUDA_ERROR_NOT_READY).is_err());
/// ```
#[inline]
pub fn check(code: CUresult) -> Result<(), DriverError> {
    if code == CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(DriverError(code))
    }
}

impl DriverError {
    /// The code a cudrv error maps to (the table above), with cudrv's message kept as the
    /// [`detail`](Self::detail).
    ///
    /// A method rather than a `From` impl: a second `From<_> for DriverError` would make `?`
    /// ambiguous in closures whose error type is inferred, which compile with cudarc.
    ///
    /// ```
    /// use cudrv_compat::imp::driver::DriverError;
    /// let e = DriverError::from_cudrv(cudrv::Error::InvalidArgument("bad length".into()));
    /// println!("{e}");
    /// ```
    #[cold]
    pub fn from_cudrv(e: cudrv::Error) -> Self {
        use cudrv::Error as E;
        let code = match &e {
            E::Driver { code, .. } | E::ModuleLoad { code, .. } => {
                CUresult::from_raw(*code).unwrap_or(CUresult::CUDA_ERROR_UNKNOWN)
            }
            E::MissingSymbol { .. } | E::UnknownKernel { .. } => CUresult::CUDA_ERROR_NOT_FOUND,
            E::NoDriver { .. } => CUresult::CUDA_ERROR_NO_DEVICE,
            E::InvalidArgument(_) | E::InvalidLaunch(_) => CUresult::CUDA_ERROR_INVALID_VALUE,
            E::OutOfMemory { .. } | E::AllocationFailed { .. } => CUresult::CUDA_ERROR_OUT_OF_MEMORY,
            E::Io { .. } => CUresult::CUDA_ERROR_FILE_NOT_FOUND,
            // A refused capture carries the driver's code; a misused one (ending a capture that
            // was not begun) is an illegal state.
            E::Capture { .. } => e
                .driver_code()
                .and_then(CUresult::from_raw)
                .unwrap_or(CUresult::CUDA_ERROR_ILLEGAL_STATE),
            _ => CUresult::CUDA_ERROR_UNKNOWN,
        };
        DriverError::with_detail(code, e.to_string())
    }
}

impl fmt::Debug for DriverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self.error_name().map(|s| s.to_string_lossy().into_owned());
        let text = self.error_string().map(|s| s.to_string_lossy().into_owned());
        match (name, text) {
            (Ok(n), Ok(t)) => write!(f, "DriverError({n}, \"{t}\")")?,
            _ => write!(f, "DriverError({:?})", self.0)?,
        }
        if let Some(detail) = self.detail() {
            write!(f, ": {detail}")?;
        }
        Ok(())
    }
}

impl fmt::Display for DriverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self:?}")
    }
}

impl std::error::Error for DriverError {}
