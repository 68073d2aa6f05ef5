//! The activity API: CUPTI records what the GPU and the driver did into buffers the application
//! hands it (cudarc's `cupti::result::activity`).

use std::ffi::c_void;

use super::CuptiError;
use crate::imp::cupti::sys;
use crate::imp::driver::sys as driver_sys;

/// Configures PC sampling for `ctx`.
///
/// # Safety
/// `ctx` must be live and `config` valid.
pub unsafe fn configure_pc_sampling(
    ctx: driver_sys::CUcontext,
    config: *mut sys::CUpti_ActivityPCSamplingConfig,
) -> Result<(), CuptiError> {
    // SAFETY: forwarded to the caller.
    unsafe { sys::cuptiActivityConfigurePCSampling(ctx, config) }.result()
}

/// Configures `count` unified-memory counters.
///
/// # Safety
/// `config` must point to `count` configurations.
pub unsafe fn configure_unified_memory_counter(
    config: *mut sys::CUpti_ActivityUnifiedMemoryCounterConfig,
    count: u32,
) -> Result<(), CuptiError> {
    // SAFETY: forwarded to the caller.
    unsafe { sys::cuptiActivityConfigureUnifiedMemoryCounter(config, count) }.result()
}

/// Stops recording activities of `kind`.
pub fn disable(kind: sys::CUpti_ActivityKind) -> Result<(), CuptiError> {
    // SAFETY: a plain value.
    unsafe { sys::cuptiActivityDisable(kind) }.result()
}

/// Stops recording activities of `kind` in `context`.
///
/// # Safety
/// `context` must be live.
pub unsafe fn disable_context(context: driver_sys::CUcontext, kind: sys::CUpti_ActivityKind) -> Result<(), CuptiError> {
    // SAFETY: forwarded to the caller.
    unsafe { sys::cuptiActivityDisableContext(context, kind) }.result()
}

/// Starts recording activities of `kind`.
pub fn enable(kind: sys::CUpti_ActivityKind) -> Result<(), CuptiError> {
    // SAFETY: a plain value.
    unsafe { sys::cuptiActivityEnable(kind) }.result()
}

/// Records synchronization for every sync call, not only the blocking ones (1 on, 0 off).
pub fn enable_all_sync_records(enable: u8) -> Result<(), CuptiError> {
    // SAFETY: a plain value.
    unsafe { sys::cuptiActivityEnableAllSyncRecords(enable) }.result()
}

/// Records where memory allocations come from (1 on, 0 off).
pub fn enable_allocation_source(enable: u8) -> Result<(), CuptiError> {
    // SAFETY: a plain value.
    unsafe { sys::cuptiActivityEnableAllocationSource(enable) }.result()
}

/// Enables `kind` and dumps the records of what already exists.
pub fn enable_and_dump(kind: sys::CUpti_ActivityKind) -> Result<(), CuptiError> {
    // SAFETY: a plain value.
    unsafe { sys::cuptiActivityEnableAndDump(kind) }.result()
}

/// Starts recording activities of `kind` in `context`.
///
/// # Safety
/// `context` must be live.
pub unsafe fn enable_context(context: driver_sys::CUcontext, kind: sys::CUpti_ActivityKind) -> Result<(), CuptiError> {
    // SAFETY: forwarded to the caller.
    unsafe { sys::cuptiActivityEnableContext(context, kind) }.result()
}

/// Records device-side graph launches (1 on, 0 off).
pub fn enable_device_graph(enable: u8) -> Result<(), CuptiError> {
    // SAFETY: a plain value.
    unsafe { sys::cuptiActivityEnableDeviceGraph(enable) }.result()
}

/// Records (1) or skips (0) one driver API call.
pub fn enable_driver_api(cbid: sys::CUpti_CallbackId, enable: u8) -> Result<(), CuptiError> {
    // SAFETY: plain values.
    unsafe { sys::cuptiActivityEnableDriverApi(cbid, enable) }.result()
}

/// Uses hardware tracing where the device has it (1 on, 0 off).
pub fn enable_hw_trace(enable: u8) -> Result<(), CuptiError> {
    // SAFETY: a plain value.
    unsafe { sys::cuptiActivityEnableHWTrace(enable) }.result()
}

/// Records kernel queue and submit timestamps (1 on, 0 off).
pub fn enable_latency_timestamps(enable: u8) -> Result<(), CuptiError> {
    // SAFETY: a plain value.
    unsafe { sys::cuptiActivityEnableLatencyTimestamps(enable) }.result()
}

/// Records kernel launch attributes (1 on, 0 off).
pub fn enable_launch_attributes(enable: u8) -> Result<(), CuptiError> {
    // SAFETY: a plain value.
    unsafe { sys::cuptiActivityEnableLaunchAttributes(enable) }.result()
}

/// Records (1) or skips (0) one runtime API call.
pub fn enable_runtime_api(cbid: sys::CUpti_CallbackId, enable: u8) -> Result<(), CuptiError> {
    // SAFETY: plain values.
    unsafe { sys::cuptiActivityEnableRuntimeApi(cbid, enable) }.result()
}

/// Flushes the records of one stream of `context`.
///
/// # Safety
/// `context` must be live.
pub unsafe fn flush(context: driver_sys::CUcontext, stream_id: u32, flag: u32) -> Result<(), CuptiError> {
    // SAFETY: forwarded to the caller.
    unsafe { sys::cuptiActivityFlush(context, stream_id, flag) }.result()
}

/// Flushes every buffer to the completion callback (`flag`: `CUpti_ActivityFlag` bits).
pub fn flush_all(flag: u32) -> Result<(), CuptiError> {
    // SAFETY: a plain value.
    unsafe { sys::cuptiActivityFlushAll(flag) }.result()
}

/// Flushes periodically, every `time` milliseconds (0: off).
pub fn flush_period(time: u32) -> Result<(), CuptiError> {
    // SAFETY: a plain value.
    unsafe { sys::cuptiActivityFlushPeriod(time) }.result()
}

/// Reads an activity attribute into `value` (`value_size` bytes).
///
/// # Safety
/// `value_size` and `value` must be valid, `value` for `*value_size` bytes.
pub unsafe fn get_attribute(
    attr: sys::CUpti_ActivityAttribute,
    value_size: *mut usize,
    value: *mut c_void,
) -> Result<(), CuptiError> {
    // SAFETY: forwarded to the caller.
    unsafe { sys::cuptiActivityGetAttribute(attr, value_size, value) }.result()
}

/// Moves `record` to the next record of a completed buffer (null: the first); ends with
/// `CUPTI_ERROR_MAX_LIMIT_REACHED`.
///
/// # Safety
/// `buffer` must be a buffer CUPTI completed, with `valid_buffer_size_bytes` valid bytes, and
/// `record` null or a record of that buffer.
pub unsafe fn get_next_record(
    buffer: *mut u8,
    valid_buffer_size_bytes: usize,
    record: *mut *mut sys::CUpti_Activity,
) -> Result<(), CuptiError> {
    // SAFETY: forwarded to the caller.
    unsafe { sys::cuptiActivityGetNextRecord(buffer, valid_buffer_size_bytes, record) }.result()
}

/// How many records of one stream were dropped for want of buffer space.
///
/// # Safety
/// `context` must be live or null and `dropped` valid for one write.
pub unsafe fn get_num_dropped_records(
    context: driver_sys::CUcontext,
    stream_id: u32,
    dropped: *mut usize,
) -> Result<(), CuptiError> {
    // SAFETY: forwarded to the caller.
    unsafe { sys::cuptiActivityGetNumDroppedRecords(context, stream_id, dropped) }.result()
}

/// Pops the innermost external correlation id of `kind`.
///
/// # Safety
/// `last_id` must be null or valid for one write.
pub unsafe fn pop_external_correlation_id(
    kind: sys::CUpti_ExternalCorrelationKind,
    last_id: *mut u64,
) -> Result<(), CuptiError> {
    // SAFETY: forwarded to the caller.
    unsafe { sys::cuptiActivityPopExternalCorrelationId(kind, last_id) }.result()
}

/// Pushes an external correlation id of `kind` for this thread's later API calls.
pub fn push_external_correlation_id(kind: sys::CUpti_ExternalCorrelationKind, id: u64) -> Result<(), CuptiError> {
    // SAFETY: plain values.
    unsafe { sys::cuptiActivityPushExternalCorrelationId(kind, id) }.result()
}

/// Registers the functions CUPTI calls for an empty buffer and with a completed one.
pub fn register_callbacks(
    func_buffer_requested: sys::CUpti_BuffersCallbackRequestFunc,
    func_buffer_completed: sys::CUpti_BuffersCallbackCompleteFunc,
) -> Result<(), CuptiError> {
    // SAFETY: CUPTI stores the two function pointers; calling them is their authors' contract.
    unsafe { sys::cuptiActivityRegisterCallbacks(func_buffer_requested, func_buffer_completed) }.result()
}

/// Registers the function that supplies activity timestamps.
pub fn register_timestamp_callback(func_timestamp: sys::CUpti_TimestampCallbackFunc) -> Result<(), CuptiError> {
    // SAFETY: CUPTI stores the function pointer; calling it is its author's contract.
    unsafe { sys::cuptiActivityRegisterTimestampCallback(func_timestamp) }.result()
}

/// Writes an activity attribute from `value` (`value_size` bytes).
///
/// # Safety
/// `value_size` and `value` must be valid, `value` for `*value_size` bytes.
pub unsafe fn set_attribute(
    attr: sys::CUpti_ActivityAttribute,
    value_size: *mut usize,
    value: *mut c_void,
) -> Result<(), CuptiError> {
    // SAFETY: forwarded to the caller.
    unsafe { sys::cuptiActivitySetAttribute(attr, value_size, value) }.result()
}
