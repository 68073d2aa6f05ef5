//! Sticky faults: the driver errors after which a context cannot be used again in this process.
//!
//! A kernel that reads or writes an illegal address, traps, asserts or runs past the watchdog
//! leaves its context in an error state that CUDA documents as permanent: every later call in that
//! context fails with the same code, and not even a reset of the primary context brings the device
//! back in the same process. The only remedy is to **restart the process** (or the worker that
//! owns the GPU); see `examples/supervisor.rs` for a supervisor that does so.
//!
//! cudrv records the first such error per context when any call returns it. From then on every
//! cudrv call that binds the context fails fast with [`Error::ContextFaulted`], naming the
//! original fault, instead of a driver error from whichever entry point it reached;
//! [`Context::health`](crate::Context::health) reports it. The fast path costs one relaxed atomic
//! load while no context has faulted.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;

use crate::error::Error;
use crate::sys::{self, CUresult};

/// Whether any context of the process has faulted (the fast path of [`check_context`]).
static ANY_FAULT: AtomicBool = AtomicBool::new(false);
/// The first sticky fault of each faulted context, by raw handle.
static FAULTS: Mutex<Option<HashMap<usize, Error>>> = Mutex::new(None);

/// Whether `code` is one CUDA documents as leaving the context unusable for the rest of the
/// process (the "inconsistent state ... the process must be terminated and relaunched" codes).
pub(crate) fn is_sticky_code(code: u32) -> bool {
    const STICKY: [CUresult; 9] = [
        CUresult::CUDA_ERROR_ILLEGAL_ADDRESS,
        CUresult::CUDA_ERROR_LAUNCH_TIMEOUT,
        CUresult::CUDA_ERROR_ASSERT,
        CUresult::CUDA_ERROR_HARDWARE_STACK_ERROR,
        CUresult::CUDA_ERROR_ILLEGAL_INSTRUCTION,
        CUresult::CUDA_ERROR_MISALIGNED_ADDRESS,
        CUresult::CUDA_ERROR_INVALID_ADDRESS_SPACE,
        CUresult::CUDA_ERROR_INVALID_PC,
        CUresult::CUDA_ERROR_LAUNCH_FAILED,
    ];
    STICKY.iter().any(|c| c.0 == code)
}

/// Records `err` (a sticky driver error) against the context current on this thread, unless that
/// context already has a fault on record.
#[cold]
pub(crate) fn record(err: &Error) {
    let mut current = std::ptr::null_mut();
    // SAFETY: writes one CUcontext through a valid pointer (it reads thread state only, and works
    // after a fault).
    let rc = unsafe { sys::cuCtxGetCurrent(&mut current) };
    if rc != CUresult::CUDA_SUCCESS || current.is_null() {
        return;
    }
    let mut faults = FAULTS.lock();
    faults
        .get_or_insert_with(HashMap::new)
        .entry(current as usize)
        .or_insert_with(|| err.clone());
    ANY_FAULT.store(true, Ordering::Release);
}

/// The fault on record for the context `raw`, if any.
pub(crate) fn fault_of(raw: sys::CUcontext) -> Option<Error> {
    if !ANY_FAULT.load(Ordering::Acquire) {
        return None;
    }
    FAULTS.lock().as_ref()?.get(&(raw as usize)).cloned()
}

/// `Err(ContextFaulted)` when the context `raw` has a fault on record: the check every binding of
/// a context makes.
#[inline]
pub(crate) fn check_context(raw: sys::CUcontext) -> Result<(), Error> {
    if !ANY_FAULT.load(Ordering::Relaxed) {
        return Ok(());
    }
    match fault_of(raw) {
        Some(fault) => Err(Error::ContextFaulted { fault: Box::new(fault) }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sticky_codes_are_the_documented_ones() {
        assert!(is_sticky_code(700)); // illegal address
        assert!(is_sticky_code(719)); // launch failed (a trap)
        assert!(is_sticky_code(710)); // device-side assert
        assert!(!is_sticky_code(1)); // invalid value
        assert!(!is_sticky_code(2)); // out of memory
        assert!(!is_sticky_code(600)); // not ready
    }

    #[test]
    fn an_unfaulted_context_passes_the_check() {
        assert!(check_context(std::ptr::null_mut::<sys::CUctx_st>()).is_ok());
    }
}
