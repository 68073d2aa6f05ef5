//! Compiling PTX to a cubin with the driver's JIT linker (`cuLinkCreate` / `cuLinkAddData` /
//! `cuLinkComplete`), so that the result can be kept in cudrv's
//! [kernel cache](crate::kernel_cache) and loaded later without compiling.

use std::ffi::{c_void, CString};
use std::ptr;
use std::sync::Arc;

use crate::context::Context;
use crate::driver::cu;
use crate::error::{Error, Result};
use crate::ptx_info;
use crate::sys::{self, CUjitInputType, CUjit_option};

/// A link state, destroyed on drop (the cubin it produced is copied out first).
struct LinkState(sys::CUlinkState);

impl Drop for LinkState {
    fn drop(&mut self) {
        // SAFETY: created by cuLinkCreate and destroyed once, here.
        let _ = unsafe { cu!(cuLinkDestroy(self.0)) };
    }
}

/// The cubin the driver compiles `ptx` (NUL-terminated PTX text) to for `ctx`'s device, with
/// the code `cuModuleLoadData` would make: optimization level 4 and no position-independent
/// code. (The linker's default since CUDA 12 is position-independent code, which made cudrv's
/// wgmma GEMM kernels measurably slower than the same PTX loaded by `cuModuleLoadData`.)
pub(crate) fn compile_to_cubin(ctx: &Arc<Context>, ptx: &[u8], name: &str) -> Result<Vec<u8>> {
    if ptx.last() != Some(&0) {
        return Err(Error::InvalidArgument(format!(
            "PTX module `{name}` is not NUL-terminated"
        )));
    }
    let cname =
        CString::new(name).map_err(|_| Error::InvalidArgument(format!("module name {name:?} contains a NUL")))?;
    ctx.bind_to_thread()?;
    // The target: the context's device, with the architecture-specific features (`sm_90a`)
    // when the PTX asks for them. PTX given as bytes here was text (a `&str`) before.
    let (major, minor) = ctx.compute_capability();
    let accelerated = ptx_info::accelerated_target(std::str::from_utf8(ptx).unwrap_or_default());
    let base = if accelerated {
        sys::CU_COMPUTE_ACCELERATED_TARGET_BASE as usize
    } else {
        0
    };
    let target = (major * 10 + minor) as usize + base;
    // No error log: when the linker fails, the caller has the driver load the PTX itself,
    // which reports the error with its log.
    let mut options = [
        CUjit_option::CU_JIT_OPTIMIZATION_LEVEL,
        CUjit_option::CU_JIT_POSITION_INDEPENDENT_CODE,
        CUjit_option::CU_JIT_TARGET,
    ];
    // The driver reads option values as pointer-sized words; these ints are passed in the
    // words themselves.
    let mut values = [4usize as *mut c_void, ptr::null_mut(), target as *mut c_void];
    let mut raw = ptr::null_mut();
    // SAFETY: three options with their values, read during the call.
    unsafe {
        cu!(cuLinkCreate_v2(
            options.len() as u32,
            options.as_mut_ptr(),
            values.as_mut_ptr(),
            &mut raw
        ))?
    };
    let state = LinkState(raw);
    // SAFETY: `ptx` is NUL-terminated PTX text of `ptx.len()` bytes that outlives the call; the
    // name is NUL-terminated; no per-input options.
    unsafe {
        cu!(cuLinkAddData_v2(
            state.0,
            CUjitInputType::CU_JIT_INPUT_PTX,
            ptx.as_ptr().cast_mut().cast(),
            ptx.len(),
            cname.as_ptr(),
            0,
            ptr::null_mut(),
            ptr::null_mut()
        ))?
    };
    let (mut cubin, mut size) = (ptr::null_mut(), 0usize);
    // SAFETY: writes a pointer and a size; the image stays valid until the state is destroyed.
    unsafe { cu!(cuLinkComplete(state.0, &mut cubin, &mut size))? };
    if cubin.is_null() || size == 0 {
        return Err(Error::InvalidArgument(format!(
            "the JIT produced no image for `{name}`"
        )));
    }
    // SAFETY: the driver owns `size` bytes at `cubin` until `state` drops (after this copy).
    let image = unsafe { std::slice::from_raw_parts(cubin.cast::<u8>(), size) }.to_vec();
    drop(state);
    Ok(image)
}
