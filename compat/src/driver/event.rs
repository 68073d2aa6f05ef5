//! [`CudaEvent`]: a driver event of a context.

use std::sync::Arc;

use super::context::CudaContext;
use super::error::DriverError;
use super::stream::CudaStream;
use super::{cu, sys};

// ---------------------------------------------------------------------------------------------
// Events
// ---------------------------------------------------------------------------------------------

/// A CUDA event (cudarc's `CudaEvent`).
#[derive(Debug)]
pub struct CudaEvent {
    pub(super) cu_event: sys::CUevent,
    pub(super) ctx: Arc<CudaContext>,
}

// SAFETY: an event handle may be used from any thread.
unsafe impl Send for CudaEvent {}
// SAFETY: as above; `&CudaEvent` only passes the handle to the driver.
unsafe impl Sync for CudaEvent {}

impl Drop for CudaEvent {
    fn drop(&mut self) {
        self.ctx.record_err(self.ctx.bind_to_thread());
        // SAFETY: created by this value and destroyed once.
        self.ctx.record_err(unsafe { cu!(cuEventDestroy_v2(self.cu_event)) });
    }
}

impl CudaEvent {
    /// The driver's handle.
    pub fn cu_event(&self) -> sys::CUevent {
        self.cu_event
    }

    /// The context the event belongs to.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// Records the work queued so far on `stream`.
    pub fn record(&self, stream: &CudaStream) -> Result<(), DriverError> {
        if self.ctx != stream.ctx {
            return Err(DriverError(sys::CUresult::CUDA_ERROR_INVALID_CONTEXT));
        }
        self.ctx.bind_to_thread()?;
        // SAFETY: both handles are live and of the same context.
        unsafe { cu!(cuEventRecord(self.cu_event, stream.cu_stream)) }
    }

    /// Waits for the recorded work.
    pub fn synchronize(&self) -> Result<(), DriverError> {
        self.ctx.bind_to_thread()?;
        // SAFETY: a live event.
        unsafe { cu!(cuEventSynchronize(self.cu_event)) }
    }

    /// Milliseconds from `self` to `end` (both need timing, i.e. not `CU_EVENT_DISABLE_TIMING`).
    pub fn elapsed_ms(&self, end: &Self) -> Result<f32, DriverError> {
        if self.ctx != end.ctx {
            return Err(DriverError(sys::CUresult::CUDA_ERROR_INVALID_CONTEXT));
        }
        self.synchronize()?;
        end.synchronize()?;
        let mut ms = 0.0f32;
        // SAFETY: writes one float; both events are live and complete.
        unsafe { cu!(cuEventElapsedTime(&mut ms, self.cu_event, end.cu_event))? };
        Ok(ms)
    }

    /// Whether the recorded work has completed (`false` on errors too).
    pub fn is_complete(&self) -> bool {
        self.try_is_complete().unwrap_or(false)
    }

    /// Whether the recorded work has completed.
    pub fn try_is_complete(&self) -> Result<bool, DriverError> {
        self.ctx.bind_to_thread()?;
        // SAFETY: a live event.
        match unsafe { cu!(cuEventQuery(self.cu_event)) } {
            Ok(()) => Ok(true),
            Err(DriverError(sys::CUresult::CUDA_ERROR_NOT_READY)) => Ok(false),
            Err(e) => Err(e),
        }
    }
}
