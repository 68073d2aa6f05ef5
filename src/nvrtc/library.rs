//! Loading libnvrtc at run time, the way cudrv loads libcuda: the first that loads of
//! `$CUDRV_LIBNVRTC` (a path), `libnvrtc.so.13` / `libnvrtc.so.12` (the one matching the
//! driver's major version first), `libnvrtc.so`. An absent library, or one without an entry point
//! every NVRTC since 11.2 has, is an error from the call that needed it, never a panic; the
//! entry points newer than that (none yet) would be resolved as optional.

use std::ffi::{c_char, c_int, c_void};
use std::sync::OnceLock;

use crate::error::{Error, Result};

/// `nvrtcProgram`.
pub(crate) type ProgramHandle = *mut c_void;

type CreateFn = unsafe extern "C" fn(
    *mut ProgramHandle,
    *const c_char,
    *const c_char,
    c_int,
    *const *const c_char,
    *const *const c_char,
) -> c_int;
type CompileFn = unsafe extern "C" fn(ProgramHandle, c_int, *const *const c_char) -> c_int;
type SizeFn = unsafe extern "C" fn(ProgramHandle, *mut usize) -> c_int;
type TextFn = unsafe extern "C" fn(ProgramHandle, *mut c_char) -> c_int;
type DestroyFn = unsafe extern "C" fn(*mut ProgramHandle) -> c_int;
type VersionFn = unsafe extern "C" fn(*mut c_int, *mut c_int) -> c_int;
type AddNameFn = unsafe extern "C" fn(ProgramHandle, *const c_char) -> c_int;
type LoweredFn = unsafe extern "C" fn(ProgramHandle, *const c_char, *mut *const c_char) -> c_int;

/// The NVRTC entry points cudrv calls.
pub(crate) struct Library {
    pub(crate) create: CreateFn,
    pub(crate) compile: CompileFn,
    pub(crate) ptx_size: SizeFn,
    pub(crate) ptx: TextFn,
    pub(crate) cubin_size: SizeFn,
    pub(crate) cubin: TextFn,
    pub(crate) log_size: SizeFn,
    pub(crate) log: TextFn,
    pub(crate) destroy: DestroyFn,
    pub(crate) version: VersionFn,
    pub(crate) add_name: AddNameFn,
    pub(crate) lowered: LoweredFn,
    _lib: libloading::Library,
}

/// The names tried, in order.
fn candidates() -> Vec<String> {
    let mut out: Vec<String> = crate::sys::loader::named_by("CUDRV_LIBNVRTC").into_iter().collect();
    let driver_major = crate::driver_version().map(|v| v.major()).unwrap_or(13);
    if driver_major >= 13 {
        out.extend(["libnvrtc.so.13".to_string(), "libnvrtc.so.12".to_string()]);
    } else {
        out.extend(["libnvrtc.so.12".to_string(), "libnvrtc.so.13".to_string()]);
    }
    out.push("libnvrtc.so".to_string());
    out
}

/// The process's libnvrtc, loaded on first use.
pub(crate) fn library() -> Result<&'static Library> {
    static LIB: OnceLock<std::result::Result<Library, (String, String)>> = OnceLock::new();
    LIB.get_or_init(|| load_from(&candidates()))
        .as_ref()
        .map_err(|(tried, reason)| Error::NoLibrary {
            library: "libnvrtc",
            tried: tried.clone(),
            reason: format!("{reason}; set CUDRV_LIBNVRTC to its path"),
        })
}

pub(crate) fn load_from(names: &[String]) -> std::result::Result<Library, (String, String)> {
    let tried = names.join(", ");
    let mut reason = String::from("no candidates");
    for name in names {
        // SAFETY: loading libnvrtc runs its initialisers, which have no preconditions.
        let lib = match unsafe { libloading::Library::new(name) } {
            Ok(lib) => lib,
            Err(e) => {
                reason = e.to_string();
                continue;
            }
        };
        return resolve(lib).map_err(|missing| (name.clone(), format!("{name} lacks `{missing}`")));
    }
    Err((tried, reason))
}

fn resolve(lib: libloading::Library) -> std::result::Result<Library, &'static str> {
    fn get<T: Copy>(lib: &libloading::Library, name: &'static str) -> std::result::Result<T, &'static str> {
        // SAFETY: each symbol is looked up with the signature of nvrtc.h's declaration of it.
        unsafe { lib.get::<T>(name.as_bytes()) }
            .map(|s| *s)
            .map_err(|_| name.trim_end_matches('\0'))
    }
    Ok(Library {
        create: get(&lib, "nvrtcCreateProgram\0")?,
        compile: get(&lib, "nvrtcCompileProgram\0")?,
        ptx_size: get(&lib, "nvrtcGetPTXSize\0")?,
        ptx: get(&lib, "nvrtcGetPTX\0")?,
        cubin_size: get(&lib, "nvrtcGetCUBINSize\0")?,
        cubin: get(&lib, "nvrtcGetCUBIN\0")?,
        log_size: get(&lib, "nvrtcGetProgramLogSize\0")?,
        log: get(&lib, "nvrtcGetProgramLog\0")?,
        destroy: get(&lib, "nvrtcDestroyProgram\0")?,
        version: get(&lib, "nvrtcVersion\0")?,
        add_name: get(&lib, "nvrtcAddNameExpression\0")?,
        lowered: get(&lib, "nvrtcGetLoweredName\0")?,
        _lib: lib,
    })
}

/// The name of an `nvrtcResult`.
pub(crate) fn status_name(code: c_int) -> &'static str {
    match code {
        0 => "NVRTC_SUCCESS",
        1 => "NVRTC_ERROR_OUT_OF_MEMORY",
        2 => "NVRTC_ERROR_PROGRAM_CREATION_FAILURE",
        3 => "NVRTC_ERROR_INVALID_INPUT",
        4 => "NVRTC_ERROR_INVALID_PROGRAM",
        5 => "NVRTC_ERROR_INVALID_OPTION",
        6 => "NVRTC_ERROR_COMPILATION",
        7 => "NVRTC_ERROR_BUILTIN_OPERATION_FAILURE",
        8 => "NVRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION",
        9 => "NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION",
        10 => "NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID",
        11 => "NVRTC_ERROR_INTERNAL_ERROR",
        _ => "NVRTC_ERROR_UNKNOWN",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_library_names_what_was_tried() {
        let Err((tried, reason)) = load_from(&["/nonexistent/libnvrtc.so.13".to_string()]) else {
            panic!("no such library");
        };
        assert!(tried.contains("/nonexistent/libnvrtc.so.13"), "{tried}");
        assert!(!reason.is_empty());
    }

    #[test]
    fn statuses_have_names() {
        assert_eq!(status_name(6), "NVRTC_ERROR_COMPILATION");
        assert_eq!(status_name(99), "NVRTC_ERROR_UNKNOWN");
    }
}
