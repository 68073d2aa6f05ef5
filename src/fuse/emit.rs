//! Fused kernels made ahead of time: PTX written by a build script (or any tool) and versioned
//! with the project, loaded later by [`super::FusedKernel::from_ptx`] without NVRTC.

use std::path::{Path, PathBuf};

use super::kernel::signature;
use super::Fusion;
use crate::error::{Error, Result};
use crate::nvrtc::Program;

/// Compiles `fusion` to PTX for `arch` (`"compute_80"` runs on every GPU since the A100; the
/// driver finishes it for the device) and writes `<dir>/<name>.ptx`, and the CUDA source beside
/// it as `<name>.cu`. Returns the PTX file's path. Needs NVRTC where it runs (a build machine),
/// not where the PTX is later loaded.
///
/// ```no_run
/// // build.rs
/// use cudrv::fuse::{emit_ptx, DType, Fusion};
/// let mut f = Fusion::new("twice", DType::F32);
/// let x = f.input("x");
/// f.output("y", x * 2.0);
/// let out = std::env::var("OUT_DIR").unwrap();
/// let path = emit_ptx(&f, "compute_80", &out)?;
/// println!("cargo:rerun-if-changed=build.rs");
/// # let _ = path;
/// # Ok::<(), cudrv::Error>(())
/// ```
pub fn emit_ptx(fusion: &Fusion, arch: &str, dir: impl AsRef<Path>) -> Result<PathBuf> {
    let source = fusion.source()?;
    let compiled = Program::new(source.clone())
        .name(format!("{}.cu", fusion.name))
        .arch(arch)
        .compile()?;
    let dir = dir.as_ref();
    let write = |path: &Path, text: &str| {
        std::fs::write(path, text).map_err(|e| Error::Io {
            path: path.display().to_string(),
            message: e.to_string(),
        })
    };
    let ptx_path = dir.join(format!("{}.ptx", fusion.name));
    write(
        &ptx_path,
        &format!("{}\n{}", signature(fusion, &source), compiled.ptx()),
    )?;
    write(&dir.join(format!("{}.cu", fusion.name)), &source)?;
    Ok(ptx_path)
}
