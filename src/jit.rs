//! Compiling PTX to a cubin with the driver's JIT linker (`cuLinkCreate` / `cuLinkAddData` /
//! `cuLinkComplete`), so that the result can be kept in cudrv's
//! [kernel cache](crate::kernel_cache) and loaded later without compiling.

use std::ffi::{c_void, CString};
use std::ptr;
use std::sync::Arc;

use crate::context::Context;
use crate::driver::cu;
use crate::error::{Error, Result};
use crate::sys::{self, CUjitInputType, CUjit_option};

/// The size of the buffer the JIT writes its error log into.
const LOG_BYTES: usize = 16 * 1024;

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
    let mut log = vec![0u8; LOG_BYTES];
    // The target: the context's device, with the architecture-specific features (`sm_90a`)
    // when the PTX asks for them.
    let (major, minor) = ctx.compute_capability();
    let accelerated = accelerated_target(ptx);
    let target = (major * 10 + minor) as usize
        + if accelerated {
            sys::CU_COMPUTE_ACCELERATED_TARGET_BASE as usize
        } else {
            0
        };
    let mut options = [
        CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
        CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
        CUjit_option::CU_JIT_OPTIMIZATION_LEVEL,
        CUjit_option::CU_JIT_POSITION_INDEPENDENT_CODE,
        CUjit_option::CU_JIT_TARGET,
    ];
    // The driver reads option values as pointer-sized words: a pointer, a size, then ints
    // (passed in the words themselves).
    let mut values = [
        log.as_mut_ptr().cast::<c_void>(),
        LOG_BYTES as *mut c_void,
        4usize as *mut c_void,
        ptr::null_mut(),
        target as *mut c_void,
    ];
    let mut raw = ptr::null_mut();
    // SAFETY: five options with their values; the log buffer outlives the link state (dropped
    // below, before `log`).
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
    drop(log);
    Ok(image)
}

/// Whether the PTX's `.target` is architecture-specific (`sm_90a`, ...).
fn accelerated_target(ptx: &[u8]) -> bool {
    let head = &ptx[..ptx.len().min(4096)];
    String::from_utf8_lossy(head)
        .lines()
        .find_map(|l| l.trim().strip_prefix(".target"))
        .and_then(|t| t.split([',', ' ']).find(|w| w.starts_with("sm_")))
        .is_some_and(|sm| sm.ends_with('a'))
}

#[cfg(test)]
mod tests {
    #[test]
    fn architecture_specific_targets_are_seen() {
        assert!(super::accelerated_target(
            b".version 8.0\n.target sm_90a\n.address_size 64\n\0"
        ));
        assert!(!super::accelerated_target(b".version 8.0\n.target sm_80\n\0"));
    }
}
