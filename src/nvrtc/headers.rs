//! Where the CUDA headers are, so that NVRTC sources can `#include <curand_kernel.h>` or
//! `<cuda_fp16.h>` without every program spelling out the toolkit's path.
//!
//! The directories, in the order they are passed (after the program's own include paths):
//! 1. `include` of `$CUDA_PATH`, `$CUDA_HOME` and `$CUDA_ROOT` (the variables cudarc's users set);
//! 2. next to the libnvrtc that was loaded (cudrv's, loaded here if none was): `../include` (a
//!    toolkit's `targets/<arch>/lib`), and
//!    for NVIDIA's Python wheels (`site-packages/nvidia/cuda_nvrtc/lib`) every
//!    `site-packages/nvidia/*/include`, where `cuda_runtime`, `curand`, ... put their headers;
//! 3. `/usr/local/cuda/include`.
//!
//! Each found directory's `cccl` subdirectory follows it when it exists: CUDA 13 moved libcu++
//! (`<cuda/std/...>`, which `curand_kernel.h` includes) there. Only directories that exist are
//! kept, and none is added when the source includes nothing.

use std::path::{Path, PathBuf};

/// The CUDA header directories found on this machine, in search order.
///
/// ```
/// for dir in cudrv::nvrtc::cuda_include_dirs() {
///     assert!(dir.is_dir());
/// }
/// ```
pub fn cuda_include_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    for var in ["CUDA_PATH", "CUDA_HOME", "CUDA_ROOT"] {
        if let Some(root) = std::env::var_os(var).filter(|v| !v.is_empty()) {
            dirs.push(Path::new(&root).join("include"));
        }
    }
    if let Some(lib_dir) = loaded_nvrtc_dir() {
        dirs.push(lib_dir.join("../include"));
        // A wheel: site-packages/nvidia/cuda_nvrtc/lib -> site-packages/nvidia/*/include.
        if let Some(nvidia) = lib_dir.parent().and_then(Path::parent) {
            if let Ok(entries) = std::fs::read_dir(nvidia) {
                let mut wheel: Vec<PathBuf> = entries.flatten().map(|e| e.path().join("include")).collect();
                wheel.sort();
                dirs.extend(wheel);
            }
        }
    }
    dirs.push(PathBuf::from("/usr/local/cuda/include"));
    let dirs = dirs.into_iter().flat_map(|d| {
        let cccl = d.join("cccl");
        [d, cccl]
    });
    let mut seen = Vec::new();
    dirs.filter(|d| d.is_dir())
        .filter_map(|d| d.canonicalize().ok())
        .filter(|d| {
            let fresh = !seen.contains(d);
            seen.push(d.clone());
            fresh
        })
        .collect()
}

/// Whether `src` includes any header (then [`cuda_include_dirs`] are passed to NVRTC).
pub(crate) fn includes_headers(src: &str) -> bool {
    src.lines()
        .any(|l| l.trim_start().starts_with("#include") || l.trim_start().starts_with("# include"))
}

/// The directory of the libnvrtc this process has loaded, from the process's memory map; when
/// none is loaded yet, cudrv's own libnvrtc is loaded first (the one its compiles would use), so
/// the answer does not depend on whether something compiled before: a program that asks for the
/// directories and then compiles through another loader (cudarc under `legacy`) gets them too.
fn loaded_nvrtc_dir() -> Option<PathBuf> {
    mapped_nvrtc_dir().or_else(|| {
        super::library::library().ok()?;
        mapped_nvrtc_dir()
    })
}

/// The directory of a libnvrtc in the process's memory map, if one is mapped.
fn mapped_nvrtc_dir() -> Option<PathBuf> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    maps.lines()
        .filter_map(|line| line.split_whitespace().nth(5))
        .map(Path::new)
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("libnvrtc.so"))
        })
        .and_then(|p| p.parent().map(Path::to_path_buf))
}

/// What to tell a user whose program could not open a header, given NVRTC's log: where cudrv
/// looked, and how to add a directory. `None` when the log is about something else.
///
/// ```
/// let hint = cudrv::nvrtc::missing_header_hint("catastrophic error: cannot open source file \"x.h\"");
/// assert!(hint.unwrap().contains("include"));
/// assert!(cudrv::nvrtc::missing_header_hint("error: expected a \";\"").is_none());
/// ```
pub fn missing_header_hint(log: &str) -> Option<String> {
    if !log.contains("cannot open source file") && !log.contains("could not open source file") {
        return None;
    }
    let dirs = cuda_include_dirs();
    Some(if dirs.is_empty() {
        "no CUDA include directory was found (looked in $CUDA_PATH, $CUDA_HOME, $CUDA_ROOT, next to \
         libnvrtc and in /usr/local/cuda); set CUDA_PATH to the toolkit, or add the header's directory \
         as an include path"
            .to_string()
    } else {
        let shown: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
        format!(
            "the header is in none of the CUDA include directories searched ({}); add its directory as an \
             include path",
            shown.join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn includes_are_detected() {
        assert!(includes_headers("#include <curand_kernel.h>\n__global__ void k() {}"));
        assert!(includes_headers("  # include \"x.h\""));
        assert!(!includes_headers("extern \"C\" __global__ void k() {}"));
    }

    #[test]
    fn a_missing_header_gets_a_hint() {
        let hint = missing_header_hint("catastrophic error: cannot open source file \"nope.h\"").unwrap();
        assert!(hint.contains("include"), "{hint}");
        assert!(missing_header_hint("error: expected a ;").is_none());
    }

    #[test]
    fn cuda_path_is_searched_first() {
        let dir = std::env::temp_dir().join(format!("cudrv-cuda-path-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("include")).unwrap();
        // SAFETY: this test binary's tests do not read CUDA_PATH concurrently with this write
        // (no other test of this module touches it).
        unsafe { std::env::set_var("CUDA_PATH", &dir) };
        let dirs = cuda_include_dirs();
        // SAFETY: as above.
        unsafe { std::env::remove_var("CUDA_PATH") };
        assert_eq!(dirs.first(), Some(&dir.join("include").canonicalize().unwrap()));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
