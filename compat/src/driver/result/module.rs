//! Modules.

use super::*;

/// Loads a module from a file (PTX, cubin or fatbin).
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
pub unsafe fn unload(module: sys::CUmodule) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for `module`.
    unsafe { cu!(cuModuleUnload(module)) }
}
