//! CUPTI calls returning `Result<_, CuptiError>` (cudarc's `cupti::result`).

pub mod activity;

use std::ffi::{c_char, c_int, c_void, CStr};
use std::fmt;

use super::sys;
use crate::imp::driver::sys as driver_sys;

/// A failed CUPTI call: its status code, as in cudarc.
///
/// ```
/// use cudrv_compat::imp::cupti::{result::CuptiError, sys::CUptiResult};
/// assert_eq!(CUptiResult::CUPTI_SUCCESS.result(), Ok(()));
/// let e = CUptiResult::CUPTI_ERROR_INVALID_KIND.result().unwrap_err();
/// assert_eq!(e, CuptiError(CUptiResult::CUPTI_ERROR_INVALID_KIND));
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct CuptiError(pub sys::CUptiResult);

impl sys::CUptiResult {
    /// `Ok(())` for `CUPTI_SUCCESS`, the code as a [`CuptiError`] otherwise.
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::cupti::{result, result::activity, sys};
    /// # use cudrv_compat::imp::driver::{result as driver, sys as driver_sys};
    /// # driver::init()?;
    /// # let dev = driver::device::get(0)?;
    /// # let ctx = unsafe { driver::primary_ctx::retain(dev) }?;
    /// assert!(sys::CUptiResult::CUPTI_SUCCESS.result().is_ok());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn result(self) -> Result<(), CuptiError> {
        match self {
            sys::CUptiResult::CUPTI_SUCCESS => Ok(()),
            code => Err(CuptiError(code)),
        }
    }
}

impl CuptiError {
    /// CUPTI's description of the code (needs libcupti).
    ///
    /// ```no_run
    /// # use cudrv_compat::imp::cupti::{result, result::activity, sys};
    /// # use cudrv_compat::imp::driver::{result as driver, sys as driver_sys};
    /// # driver::init()?;
    /// # let dev = driver::device::get(0)?;
    /// # let ctx = unsafe { driver::primary_ctx::retain(dev) }?;
    /// let e = result::CuptiError(sys::CUptiResult::CUPTI_ERROR_INVALID_KIND);
    /// println!("{}", e.error_string()?.to_string_lossy());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn error_string(&self) -> Result<&CStr, CuptiError> {
        let mut text: *const c_char = std::ptr::null();
        // SAFETY: on success CUPTI writes a pointer to a static NUL-terminated string.
        unsafe { sys::cuptiGetResultString(self.0, &mut text) }.result()?;
        if text.is_null() {
            return Err(CuptiError(sys::CUptiResult::CUPTI_ERROR_INVALID_PARAMETER));
        }
        // SAFETY: checked non-null; CUPTI's strings are static and NUL-terminated.
        Ok(unsafe { CStr::from_ptr(text) })
    }
}

impl fmt::Debug for CuptiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.error_string() {
            Ok(text) => write!(f, "CuptiError({:?}, {:?})", self.0, text),
            Err(_) => match sys::load_error() {
                Some(why) => write!(f, "CuptiError({:?}): {why}", self.0),
                None => write!(f, "CuptiError({:?})", self.0),
            },
        }
    }
}

impl fmt::Display for CuptiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self:?}")
    }
}

impl std::error::Error for CuptiError {}

/// Whether CUPTI supports devices of compute capability `major.minor` (writes 0 or 1).
///
/// # Safety
/// `support` must be valid for one write.
///
/// ```no_run
/// # use cudrv_compat::imp::cupti::{result, result::activity, sys};
/// # use cudrv_compat::imp::driver::{result as driver, sys as driver_sys};
/// # driver::init()?;
/// # let dev = driver::device::get(0)?;
/// # let ctx = unsafe { driver::primary_ctx::retain(dev) }?;
/// let mut ok = 0;
/// // SAFETY: one int written.
/// unsafe { result::compute_capability_supported(9, 0, &mut ok) }?;
/// println!("sm_90 supported: {}", ok != 0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub unsafe fn compute_capability_supported(major: c_int, minor: c_int, support: *mut c_int) -> Result<(), CuptiError> {
    // SAFETY: forwarded to the caller.
    unsafe { sys::cuptiComputeCapabilitySupported(major, minor, support) }.result()
}

/// Whether CUPTI supports `dev` (writes 0 or 1).
///
/// # Safety
/// `support` must be valid for one write; `dev` a device handle.
///
/// ```no_run
/// # use cudrv_compat::imp::cupti::{result, result::activity, sys};
/// # use cudrv_compat::imp::driver::{result as driver, sys as driver_sys};
/// # driver::init()?;
/// # let dev = driver::device::get(0)?;
/// # let ctx = unsafe { driver::primary_ctx::retain(dev) }?;
/// let mut ok = 0;
/// // SAFETY: a device from the driver; one int written.
/// unsafe { result::device_supported(dev, &mut ok) }?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub unsafe fn device_supported(dev: driver_sys::CUdevice, support: *mut c_int) -> Result<(), CuptiError> {
    // SAFETY: forwarded to the caller.
    unsafe { sys::cuptiDeviceSupported(dev, support) }.result()
}

/// Whether `dev` is virtualized.
///
/// # Safety
/// `mode` must be valid for one write; `dev` a device handle.
///
/// ```no_run
/// # use cudrv_compat::imp::cupti::{result, result::activity, sys};
/// # use cudrv_compat::imp::driver::{result as driver, sys as driver_sys};
/// # driver::init()?;
/// # let dev = driver::device::get(0)?;
/// # let ctx = unsafe { driver::primary_ctx::retain(dev) }?;
/// let mut mode = sys::CUpti_DeviceVirtualizationMode::CUPTI_DEVICE_VIRTUALIZATION_MODE_NONE;
/// // SAFETY: a device from the driver; one value written.
/// unsafe { result::device_virtualization_mode(dev, &mut mode) }?;
/// println!("{mode:?}");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub unsafe fn device_virtualization_mode(
    dev: driver_sys::CUdevice,
    mode: *mut sys::CUpti_DeviceVirtualizationMode,
) -> Result<(), CuptiError> {
    // SAFETY: forwarded to the caller.
    unsafe { sys::cuptiDeviceVirtualizationMode(dev, mode) }.result()
}

/// Enables (1) or disables (0) every callback of every domain for `subscriber`.
///
/// # Safety
/// `subscriber` must be a live subscriber handle.
///
/// ```no_run
/// # use cudrv_compat::imp::cupti::{result, result::activity, sys};
/// # use cudrv_compat::imp::driver::{result as driver, sys as driver_sys};
/// # driver::init()?;
/// # let dev = driver::device::get(0)?;
/// # let ctx = unsafe { driver::primary_ctx::retain(dev) }?;
/// unsafe extern "C" fn on_call(_user: *mut std::ffi::c_void, _domain: sys::CUpti_CallbackDomain, _cbid: sys::CUpti_CallbackId, _data: *const std::ffi::c_void) {}
/// let mut subscriber: sys::CUpti_SubscriberHandle = std::ptr::null_mut();
/// // SAFETY: `on_call` stays valid while subscribed; unsubscribed below.
/// unsafe { result::subscribe(&mut subscriber, Some(on_call), std::ptr::null_mut()) }?;
/// // SAFETY: a live subscriber.
/// unsafe { result::enable_all_domains(1, subscriber) }?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub unsafe fn enable_all_domains(enable: u32, subscriber: sys::CUpti_SubscriberHandle) -> Result<(), CuptiError> {
    // SAFETY: forwarded to the caller.
    unsafe { sys::cuptiEnableAllDomains(enable, subscriber) }.result()
}

/// Enables (1) or disables (0) one callback for `subscriber`.
///
/// # Safety
/// `subscriber` must be a live subscriber handle.
///
/// ```no_run
/// # use cudrv_compat::imp::cupti::{result, result::activity, sys};
/// # use cudrv_compat::imp::driver::{result as driver, sys as driver_sys};
/// # driver::init()?;
/// # let dev = driver::device::get(0)?;
/// # let ctx = unsafe { driver::primary_ctx::retain(dev) }?;
/// unsafe extern "C" fn on_call(_user: *mut std::ffi::c_void, _domain: sys::CUpti_CallbackDomain, _cbid: sys::CUpti_CallbackId, _data: *const std::ffi::c_void) {}
/// let mut subscriber: sys::CUpti_SubscriberHandle = std::ptr::null_mut();
/// // SAFETY: `on_call` stays valid while subscribed; unsubscribed below.
/// unsafe { result::subscribe(&mut subscriber, Some(on_call), std::ptr::null_mut()) }?;
/// // SAFETY: a live subscriber.
/// unsafe { result::enable_callback(1, subscriber, sys::CUpti_CallbackDomain::CUPTI_CB_DOMAIN_DRIVER_API, sys::CUpti_driver_api_trace_cbid::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel as sys::CUpti_CallbackId) }?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub unsafe fn enable_callback(
    enable: u32,
    subscriber: sys::CUpti_SubscriberHandle,
    domain: sys::CUpti_CallbackDomain,
    cbid: sys::CUpti_CallbackId,
) -> Result<(), CuptiError> {
    // SAFETY: forwarded to the caller.
    unsafe { sys::cuptiEnableCallback(enable, subscriber, domain, cbid) }.result()
}

/// Enables (1) or disables (0) every callback of one domain for `subscriber`.
///
/// # Safety
/// `subscriber` must be a live subscriber handle.
///
/// ```no_run
/// # use cudrv_compat::imp::cupti::{result, result::activity, sys};
/// # use cudrv_compat::imp::driver::{result as driver, sys as driver_sys};
/// # driver::init()?;
/// # let dev = driver::device::get(0)?;
/// # let ctx = unsafe { driver::primary_ctx::retain(dev) }?;
/// unsafe extern "C" fn on_call(_user: *mut std::ffi::c_void, _domain: sys::CUpti_CallbackDomain, _cbid: sys::CUpti_CallbackId, _data: *const std::ffi::c_void) {}
/// let mut subscriber: sys::CUpti_SubscriberHandle = std::ptr::null_mut();
/// // SAFETY: `on_call` stays valid while subscribed; unsubscribed below.
/// unsafe { result::subscribe(&mut subscriber, Some(on_call), std::ptr::null_mut()) }?;
/// // SAFETY: a live subscriber.
/// unsafe { result::enable_domain(1, subscriber, sys::CUpti_CallbackDomain::CUPTI_CB_DOMAIN_DRIVER_API) }?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub unsafe fn enable_domain(
    enable: u32,
    subscriber: sys::CUpti_SubscriberHandle,
    domain: sys::CUpti_CallbackDomain,
) -> Result<(), CuptiError> {
    // SAFETY: forwarded to the caller.
    unsafe { sys::cuptiEnableDomain(enable, subscriber, domain) }.result()
}

/// Detaches CUPTI from the process.
///
/// ```no_run
/// # use cudrv_compat::imp::cupti::{result, result::activity, sys};
/// # use cudrv_compat::imp::driver::{result as driver, sys as driver_sys};
/// # driver::init()?;
/// # let dev = driver::device::get(0)?;
/// # let ctx = unsafe { driver::primary_ctx::retain(dev) }?;
/// activity::flush_all(1)?;
/// result::finalize()?; // detaches CUPTI from the process
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn finalize() -> Result<(), CuptiError> {
    // SAFETY: no arguments.
    unsafe { sys::cuptiFinalize() }.result()
}

/// Whether auto boost is on for `context`'s device.
///
/// # Safety
/// `context` must be live and `state` valid for one write.
///
/// ```no_run
/// # use cudrv_compat::imp::cupti::{result, result::activity, sys};
/// # use cudrv_compat::imp::driver::{result as driver, sys as driver_sys};
/// # driver::init()?;
/// # let dev = driver::device::get(0)?;
/// # let ctx = unsafe { driver::primary_ctx::retain(dev) }?;
/// let mut state: sys::CUpti_ActivityAutoBoostState = unsafe { std::mem::zeroed() };
/// // SAFETY: a live context; one value written.
/// match unsafe { result::get_auto_boost_state(ctx, &mut state) } {
///     Ok(()) => println!("auto boost: {}", state.enabled),
///     Err(e) => eprintln!("auto boost state not reported on this GPU: {e:?}"), // the H100's answer
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub unsafe fn get_auto_boost_state(
    context: driver_sys::CUcontext,
    state: *mut sys::CUpti_ActivityAutoBoostState,
) -> Result<(), CuptiError> {
    // SAFETY: forwarded to the caller.
    unsafe { sys::cuptiGetAutoBoostState(context, state) }.result()
}

/// The name of callback `cbid` of `domain`.
///
/// # Safety
/// `name` must be valid for one write.
///
/// ```no_run
/// # use cudrv_compat::imp::cupti::{result, result::activity, sys};
/// # use cudrv_compat::imp::driver::{result as driver, sys as driver_sys};
/// # driver::init()?;
/// # let dev = driver::device::get(0)?;
/// # let ctx = unsafe { driver::primary_ctx::retain(dev) }?;
/// let mut name: *const std::ffi::c_char = std::ptr::null();
/// // SAFETY: a valid domain and id; CUPTI writes a static string.
/// unsafe { result::get_callback_name(sys::CUpti_CallbackDomain::CUPTI_CB_DOMAIN_DRIVER_API, sys::CUpti_driver_api_trace_cbid::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel as sys::CUpti_CallbackId, &mut name) }?;
/// // SAFETY: NUL-terminated, static.
/// println!("{}", unsafe { std::ffi::CStr::from_ptr(name) }.to_string_lossy());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub unsafe fn get_callback_name(
    domain: sys::CUpti_CallbackDomain,
    cbid: u32,
    name: *mut *const c_char,
) -> Result<(), CuptiError> {
    // SAFETY: forwarded to the caller.
    unsafe { sys::cuptiGetCallbackName(domain, cbid, name) }.result()
}

/// Whether one callback is enabled for `subscriber`.
///
/// # Safety
/// `enable` must be valid for one write; `subscriber` a live handle.
///
/// ```no_run
/// # use cudrv_compat::imp::cupti::{result, result::activity, sys};
/// # use cudrv_compat::imp::driver::{result as driver, sys as driver_sys};
/// # driver::init()?;
/// # let dev = driver::device::get(0)?;
/// # let ctx = unsafe { driver::primary_ctx::retain(dev) }?;
/// unsafe extern "C" fn on_call(_user: *mut std::ffi::c_void, _domain: sys::CUpti_CallbackDomain, _cbid: sys::CUpti_CallbackId, _data: *const std::ffi::c_void) {}
/// let mut subscriber: sys::CUpti_SubscriberHandle = std::ptr::null_mut();
/// // SAFETY: `on_call` stays valid while subscribed; unsubscribed below.
/// unsafe { result::subscribe(&mut subscriber, Some(on_call), std::ptr::null_mut()) }?;
/// let mut on = 0u32;
/// // SAFETY: a live subscriber; one u32 written.
/// unsafe { result::get_callback_state(&mut on, subscriber, sys::CUpti_CallbackDomain::CUPTI_CB_DOMAIN_DRIVER_API, sys::CUpti_driver_api_trace_cbid::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel as sys::CUpti_CallbackId) }?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub unsafe fn get_callback_state(
    enable: *mut u32,
    subscriber: sys::CUpti_SubscriberHandle,
    domain: sys::CUpti_CallbackDomain,
    cbid: sys::CUpti_CallbackId,
) -> Result<(), CuptiError> {
    // SAFETY: forwarded to the caller.
    unsafe { sys::cuptiGetCallbackState(enable, subscriber, domain, cbid) }.result()
}

/// CUPTI's id of `context`.
///
/// # Safety
/// `context` must be live and `context_id` valid for one write.
///
/// ```no_run
/// # use cudrv_compat::imp::cupti::{result, result::activity, sys};
/// # use cudrv_compat::imp::driver::{result as driver, sys as driver_sys};
/// # driver::init()?;
/// # let dev = driver::device::get(0)?;
/// # let ctx = unsafe { driver::primary_ctx::retain(dev) }?;
/// let mut id = 0u32;
/// // SAFETY: a live context; one u32 written.
/// unsafe { result::get_context_id(ctx, &mut id) }?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub unsafe fn get_context_id(context: driver_sys::CUcontext, context_id: *mut u32) -> Result<(), CuptiError> {
    // SAFETY: forwarded to the caller.
    unsafe { sys::cuptiGetContextId(context, context_id) }.result()
}

/// The device id of `context` (null: the current context).
///
/// # Safety
/// `context` must be live or null and `device_id` valid for one write.
///
/// ```no_run
/// # use cudrv_compat::imp::cupti::{result, result::activity, sys};
/// # use cudrv_compat::imp::driver::{result as driver, sys as driver_sys};
/// # driver::init()?;
/// # let dev = driver::device::get(0)?;
/// # let ctx = unsafe { driver::primary_ctx::retain(dev) }?;
/// let mut id = 0u32;
/// // SAFETY: a live context; one u32 written.
/// unsafe { result::get_device_id(ctx, &mut id) }?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub unsafe fn get_device_id(context: driver_sys::CUcontext, device_id: *mut u32) -> Result<(), CuptiError> {
    // SAFETY: forwarded to the caller.
    unsafe { sys::cuptiGetDeviceId(context, device_id) }.result()
}

/// CUPTI's id of an executable graph.
///
/// # Safety
/// `graph_exec` must be live and `p_id` valid for one write.
///
/// ```no_run
/// # use cudrv_compat::imp::cupti::{result, result::activity, sys};
/// # use cudrv_compat::imp::driver::{result as driver, sys as driver_sys};
/// # driver::init()?;
/// # let dev = driver::device::get(0)?;
/// # let ctx = unsafe { driver::primary_ctx::retain(dev) }?;
/// # unsafe { driver::ctx::set_current(ctx) }?;
/// let stream = driver::stream::create(driver::stream::StreamKind::NonBlocking)?;
/// let mut id = 0u32;
/// // SAFETY: a live stream; the captured (empty) graph is instantiated, then its id written.
/// unsafe {
///     driver::stream::begin_capture(stream, driver_sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)?;
///     let graph = driver::stream::end_capture(stream)?;
///     let exec = driver::graph::instantiate(graph, driver_sys::CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH)?;
///     result::get_graph_exec_id(exec, &mut id)?;
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub unsafe fn get_graph_exec_id(graph_exec: driver_sys::CUgraphExec, p_id: *mut u32) -> Result<(), CuptiError> {
    // SAFETY: forwarded to the caller.
    unsafe { sys::cuptiGetGraphExecId(graph_exec, p_id) }.result()
}

/// CUPTI's id of a graph.
///
/// # Safety
/// `graph` must be live and `p_id` valid for one write.
///
/// ```no_run
/// # use cudrv_compat::imp::cupti::{result, result::activity, sys};
/// # use cudrv_compat::imp::driver::{result as driver, sys as driver_sys};
/// # driver::init()?;
/// # let dev = driver::device::get(0)?;
/// # let ctx = unsafe { driver::primary_ctx::retain(dev) }?;
/// # unsafe { driver::ctx::set_current(ctx) }?;
/// let stream = driver::stream::create(driver::stream::StreamKind::NonBlocking)?;
/// let mut id = 0u32;
/// // SAFETY: a live stream; the captured (empty) graph's id is written.
/// unsafe {
///     driver::stream::begin_capture(stream, driver_sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)?;
///     let graph = driver::stream::end_capture(stream)?;
///     result::get_graph_id(graph, &mut id)?;
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub unsafe fn get_graph_id(graph: driver_sys::CUgraph, p_id: *mut u32) -> Result<(), CuptiError> {
    // SAFETY: forwarded to the caller.
    unsafe { sys::cuptiGetGraphId(graph, p_id) }.result()
}

/// CUPTI's id of a graph node.
///
/// # Safety
/// `node` must be live and `node_id` valid for one write.
///
/// ```no_run
/// # use cudrv_compat::imp::cupti::{result, result::activity, sys};
/// # use cudrv_compat::imp::driver::{result as driver, sys as driver_sys};
/// # driver::init()?;
/// # let dev = driver::device::get(0)?;
/// # let ctx = unsafe { driver::primary_ctx::retain(dev) }?;
/// let node: driver_sys::CUgraphNode = std::ptr::null_mut(); // e.g. from cuGraphGetNodes
/// let mut id = 0u64;
/// // SAFETY: one u64 written; a null node is refused, not dereferenced.
/// let r = unsafe { result::get_graph_node_id(node, &mut id) };
/// assert!(r.is_err()); // CUPTI_ERROR_INVALID_PARAMETER for the null node
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub unsafe fn get_graph_node_id(node: driver_sys::CUgraphNode, node_id: *mut u64) -> Result<(), CuptiError> {
    // SAFETY: forwarded to the caller.
    unsafe { sys::cuptiGetGraphNodeId(node, node_id) }.result()
}

/// The last error of a CUPTI call on this thread (and clears it).
///
/// ```no_run
/// # use cudrv_compat::imp::cupti::{result, result::activity, sys};
/// # use cudrv_compat::imp::driver::{result as driver, sys as driver_sys};
/// # driver::init()?;
/// # let dev = driver::device::get(0)?;
/// # let ctx = unsafe { driver::primary_ctx::retain(dev) }?;
/// if let Err(e) = result::get_last_error() {
///     eprintln!("CUPTI: {e:?}");
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn get_last_error() -> Result<(), CuptiError> {
    // SAFETY: no arguments.
    unsafe { sys::cuptiGetLastError() }.result()
}

/// CUPTI's id of `stream` in `context`.
///
/// # Safety
/// The handles must be live and `stream_id` valid for one write.
///
/// ```no_run
/// # use cudrv_compat::imp::cupti::{result, result::activity, sys};
/// # use cudrv_compat::imp::driver::{result as driver, sys as driver_sys};
/// # driver::init()?;
/// # let dev = driver::device::get(0)?;
/// # let ctx = unsafe { driver::primary_ctx::retain(dev) }?;
/// let mut id = 0u32;
/// // SAFETY: a live context and its default stream; one u32 written.
/// unsafe { result::get_stream_id(ctx, std::ptr::null_mut(), &mut id) }?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub unsafe fn get_stream_id(
    context: driver_sys::CUcontext,
    stream: driver_sys::CUstream,
    stream_id: *mut u32,
) -> Result<(), CuptiError> {
    // SAFETY: forwarded to the caller.
    unsafe { sys::cuptiGetStreamId(context, stream, stream_id) }.result()
}

/// CUPTI's id of `stream`, saying whether it is a per-thread stream.
///
/// # Safety
/// The handles must be live and `stream_id` valid for one write.
///
/// ```no_run
/// # use cudrv_compat::imp::cupti::{result, result::activity, sys};
/// # use cudrv_compat::imp::driver::{result as driver, sys as driver_sys};
/// # driver::init()?;
/// # let dev = driver::device::get(0)?;
/// # let ctx = unsafe { driver::primary_ctx::retain(dev) }?;
/// let mut id = 0u32;
/// // SAFETY: a live context and its default stream; one u32 written.
/// unsafe { result::get_stream_id_ex(ctx, std::ptr::null_mut(), 0, &mut id) }?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub unsafe fn get_stream_id_ex(
    context: driver_sys::CUcontext,
    stream: driver_sys::CUstream,
    per_thread_stream: u8,
    stream_id: *mut u32,
) -> Result<(), CuptiError> {
    // SAFETY: forwarded to the caller.
    unsafe { sys::cuptiGetStreamIdEx(context, stream, per_thread_stream, stream_id) }.result()
}

/// How activity records identify threads.
///
/// # Safety
/// `type_` must be valid for one write.
///
/// ```no_run
/// # use cudrv_compat::imp::cupti::{result, result::activity, sys};
/// # use cudrv_compat::imp::driver::{result as driver, sys as driver_sys};
/// # driver::init()?;
/// # let dev = driver::device::get(0)?;
/// # let ctx = unsafe { driver::primary_ctx::retain(dev) }?;
/// let mut t = sys::CUpti_ActivityThreadIdType::CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT;
/// // SAFETY: one value written.
/// unsafe { result::get_thread_id_type(&mut t) }?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub unsafe fn get_thread_id_type(r#type: *mut sys::CUpti_ActivityThreadIdType) -> Result<(), CuptiError> {
    // SAFETY: forwarded to the caller.
    unsafe { sys::cuptiGetThreadIdType(r#type) }.result()
}

/// CUPTI's timestamp in nanoseconds.
///
/// # Safety
/// `timestamp` must be valid for one write.
///
/// ```no_run
/// # use cudrv_compat::imp::cupti::{result, result::activity, sys};
/// # use cudrv_compat::imp::driver::{result as driver, sys as driver_sys};
/// # driver::init()?;
/// # let dev = driver::device::get(0)?;
/// # let ctx = unsafe { driver::primary_ctx::retain(dev) }?;
/// let mut ns = 0u64;
/// // SAFETY: one u64 written.
/// unsafe { result::get_timestamp(&mut ns) }?;
/// println!("CUPTI clock: {ns} ns");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub unsafe fn get_timestamp(timestamp: *mut u64) -> Result<(), CuptiError> {
    // SAFETY: forwarded to the caller.
    unsafe { sys::cuptiGetTimestamp(timestamp) }.result()
}

/// Sets how activity records identify threads.
///
/// ```no_run
/// # use cudrv_compat::imp::cupti::{result, result::activity, sys};
/// # use cudrv_compat::imp::driver::{result as driver, sys as driver_sys};
/// # driver::init()?;
/// # let dev = driver::device::get(0)?;
/// # let ctx = unsafe { driver::primary_ctx::retain(dev) }?;
/// result::set_thread_id_type(sys::CUpti_ActivityThreadIdType::CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn set_thread_id_type(r#type: sys::CUpti_ActivityThreadIdType) -> Result<(), CuptiError> {
    // SAFETY: a plain value.
    unsafe { sys::cuptiSetThreadIdType(r#type) }.result()
}

/// Subscribes `callback` (CUPTI allows one subscriber per process).
///
/// # Safety
/// `subscriber` must be valid for one write; `callback` must be safe to call with `userdata`
/// from any thread until [`unsubscribe`].
///
/// ```no_run
/// # use cudrv_compat::imp::cupti::{result, result::activity, sys};
/// # use cudrv_compat::imp::driver::{result as driver, sys as driver_sys};
/// # driver::init()?;
/// # let dev = driver::device::get(0)?;
/// # let ctx = unsafe { driver::primary_ctx::retain(dev) }?;
/// unsafe extern "C" fn on_call(_user: *mut std::ffi::c_void, _domain: sys::CUpti_CallbackDomain, _cbid: sys::CUpti_CallbackId, _data: *const std::ffi::c_void) {}
/// let mut subscriber: sys::CUpti_SubscriberHandle = std::ptr::null_mut();
/// // SAFETY: `on_call` stays valid while subscribed; unsubscribed below.
/// unsafe { result::subscribe(&mut subscriber, Some(on_call), std::ptr::null_mut()) }?;
/// // SAFETY: subscribed above.
/// unsafe { result::unsubscribe(subscriber) }?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub unsafe fn subscribe(
    subscriber: *mut sys::CUpti_SubscriberHandle,
    callback: sys::CUpti_CallbackFunc,
    userdata: *mut c_void,
) -> Result<(), CuptiError> {
    // SAFETY: forwarded to the caller.
    unsafe { sys::cuptiSubscribe(subscriber, callback, userdata) }.result()
}

/// The callback domains CUPTI supports.
///
/// # Safety
/// Both pointers must be valid for one write.
///
/// ```no_run
/// # use cudrv_compat::imp::cupti::{result, result::activity, sys};
/// # use cudrv_compat::imp::driver::{result as driver, sys as driver_sys};
/// # driver::init()?;
/// # let dev = driver::device::get(0)?;
/// # let ctx = unsafe { driver::primary_ctx::retain(dev) }?;
/// let (mut count, mut table): (usize, sys::CUpti_DomainTable) = (0, std::ptr::null_mut());
/// // SAFETY: CUPTI writes the count and a static table.
/// unsafe { result::supported_domains(&mut count, &mut table) }?;
/// println!("{count} callback domains");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub unsafe fn supported_domains(
    domain_count: *mut usize,
    domain_table: *mut sys::CUpti_DomainTable,
) -> Result<(), CuptiError> {
    // SAFETY: forwarded to the caller.
    unsafe { sys::cuptiSupportedDomains(domain_count, domain_table) }.result()
}

/// Removes a subscriber.
///
/// # Safety
/// `subscriber` must come from [`subscribe`] and not be used afterwards.
///
/// ```no_run
/// # use cudrv_compat::imp::cupti::{result, result::activity, sys};
/// # use cudrv_compat::imp::driver::{result as driver, sys as driver_sys};
/// # driver::init()?;
/// # let dev = driver::device::get(0)?;
/// # let ctx = unsafe { driver::primary_ctx::retain(dev) }?;
/// unsafe extern "C" fn on_call(_user: *mut std::ffi::c_void, _domain: sys::CUpti_CallbackDomain, _cbid: sys::CUpti_CallbackId, _data: *const std::ffi::c_void) {}
/// let mut subscriber: sys::CUpti_SubscriberHandle = std::ptr::null_mut();
/// // SAFETY: `on_call` stays valid while subscribed; unsubscribed below.
/// unsafe { result::subscribe(&mut subscriber, Some(on_call), std::ptr::null_mut()) }?;
/// // SAFETY: subscribed above, unsubscribed once.
/// unsafe { result::unsubscribe(subscriber) }?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub unsafe fn unsubscribe(subscriber: sys::CUpti_SubscriberHandle) -> Result<(), CuptiError> {
    // SAFETY: forwarded to the caller.
    unsafe { sys::cuptiUnsubscribe(subscriber) }.result()
}
