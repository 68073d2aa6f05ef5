//! Modules.

use super::*;

/// Loads a module from a file (PTX, cubin or fatbin).
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// let module = result::module::load(CString::new("kernels.cubin").unwrap())?;
/// // SAFETY: not used after.
/// unsafe { result::module::unload(module) }?;
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub fn load(fname: CString) -> Result<sys::CUmodule, DriverError> {
    let mut module = std::ptr::null_mut();
    // SAFETY: a NUL-terminated path; writes one handle.
    unsafe { cu!(cuModuleLoad(&mut module, fname.as_ptr()))? };
    Ok(module)
}

/// Loads a module from an image in memory (NUL-terminated PTX, cubin or fatbin).
///
/// # Safety
/// `image` must point to a complete image.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// let ptx = CString::new(".version 7.0\n.target sm_70\n.address_size 64\n.visible .entry k() { ret; }").unwrap();
/// // SAFETY: NUL-terminated PTX text.
/// let module = unsafe { result::module::load_data(ptx.as_ptr().cast()) }?;
/// # let _ = module;
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub unsafe fn load_data(image: *const c_void) -> Result<sys::CUmodule, DriverError> {
    let mut module = std::ptr::null_mut();
    // SAFETY: the caller vouches for the image; writes one handle.
    unsafe { cu!(cuModuleLoadData(&mut module, image))? };
    Ok(module)
}

/// A kernel of a module by name.
///
/// # Safety
/// `module` must be live.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// let module = result::module::load(CString::new("kernels.cubin").unwrap())?;
/// // SAFETY: a live module.
/// let f = unsafe { result::module::get_function(module, CString::new("k").unwrap()) }?;
/// assert!(!f.is_null());
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub unsafe fn get_function(module: sys::CUmodule, name: CString) -> Result<sys::CUfunction, DriverError> {
    let mut function = std::ptr::null_mut();
    // SAFETY: a NUL-terminated name; writes one handle; the caller vouches for `module`.
    unsafe { cu!(cuModuleGetFunction(&mut function, module, name.as_ptr()))? };
    Ok(function)
}

/// (address, size) of a module's global variable.
///
/// # Safety
/// `module` must be live.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// let module = result::module::load(CString::new("kernels.cubin").unwrap())?;
/// // SAFETY: a live module.
/// let (ptr, bytes) = unsafe { result::module::get_global(module, CString::new("counter").unwrap()) }?;
/// println!("{bytes} B at {ptr:#x}");
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub unsafe fn get_global(module: sys::CUmodule, name: CString) -> Result<(sys::CUdeviceptr, usize), DriverError> {
    let (mut dptr, mut bytes) = (0, 0);
    // SAFETY: a NUL-terminated name; writes two values; the caller vouches for `module`.
    unsafe { cu!(cuModuleGetGlobal_v2(&mut dptr, &mut bytes, module, name.as_ptr()))? };
    Ok((dptr, bytes))
}

/// Unloads a module.
///
/// # Safety
/// `module` must be live; its functions and globals are not used afterwards.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::{result, sys};
/// # use std::ffi::CString;
/// # result::init()?;
/// # let dev = result::device::get(0)?;
/// # let ctx = unsafe { result::primary_ctx::retain(dev) }?;
/// # unsafe { result::ctx::set_current(ctx) }?;
/// let module = result::module::load(CString::new("kernels.cubin").unwrap())?;
/// // SAFETY: none of its functions is used after.
/// unsafe { result::module::unload(module) }?;
/// # Ok::<(), cudrv_compat::imp::driver::DriverError>(())
/// ```
pub unsafe fn unload(module: sys::CUmodule) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for `module`.
    unsafe { cu!(cuModuleUnload(module)) }
}
