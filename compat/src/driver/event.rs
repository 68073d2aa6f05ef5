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
///
/// ```no_run
/// # use cudrv_compat::imp::driver::*;
/// # use std::sync::Arc;
/// # let ctx = CudaContext::new(0)?;
/// # let stream = ctx.default_stream();
/// let (start, end) = (ctx.new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))?, ctx.new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))?);
/// start.record(&stream)?;
/// let x = stream.alloc_zeros::<f32>(1 << 24)?;
/// end.record(&stream)?;
/// println!("{:.3} ms", start.elapsed_ms(&end)?);
/// # drop(x);
/// # Ok::<(), DriverError>(())
/// ```
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
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let e = stream.record_event(None)?;
    /// assert!(!e.cu_event().is_null());
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn cu_event(&self) -> sys::CUevent {
        self.cu_event
    }

    /// The context the event belongs to.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let e = ctx.new_event(None)?;
    /// assert!(Arc::ptr_eq(e.context(), &ctx));
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// Records the work queued so far on `stream`.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let e = ctx.new_event(None)?;
    /// e.record(&stream)?;
    /// e.synchronize()?;
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn record(&self, stream: &CudaStream) -> Result<(), DriverError> {
        if self.ctx != stream.ctx {
            return Err(DriverError(sys::CUresult::CUDA_ERROR_INVALID_CONTEXT));
        }
        self.ctx.bind_to_thread()?;
        // SAFETY: both handles are live and of the same context.
        unsafe { cu!(cuEventRecord(self.cu_event, stream.cu_stream)) }
    }

    /// Waits for the recorded work.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let e = stream.record_event(None)?;
    /// e.synchronize()?;
    /// assert!(e.is_complete());
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn synchronize(&self) -> Result<(), DriverError> {
        self.ctx.bind_to_thread()?;
        // SAFETY: a live event.
        unsafe { cu!(cuEventSynchronize(self.cu_event)) }
    }

    /// Milliseconds from `self` to `end` (both need timing, i.e. not `CU_EVENT_DISABLE_TIMING`).
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let timed = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
    /// let (a, b) = (stream.record_event(timed)?, stream.record_event(timed)?);
    /// assert!(a.elapsed_ms(&b)? >= 0.0);
    /// # Ok::<(), DriverError>(())
    /// ```
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
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let e = stream.record_event(None)?;
    /// while !e.is_complete() {
    ///     std::thread::yield_now();
    /// }
    /// # Ok::<(), DriverError>(())
    /// ```
    pub fn is_complete(&self) -> bool {
        self.try_is_complete().unwrap_or(false)
    }

    /// Whether the recorded work has completed.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::driver::*;
    /// # use std::sync::Arc;
    /// # let ctx = CudaContext::new(0)?;
    /// # let stream = ctx.default_stream();
    /// let e = stream.record_event(None)?;
    /// let _done: bool = e.try_is_complete()?; // an error instead of `false` on a fault
    /// # Ok::<(), DriverError>(())
    /// ```
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
