//! `cudrv bench gemm` / `cudrv bench gemv` (being built).

use cudrv::Result;

pub fn run(what: &str, _args: &[String]) -> Result<bool> {
    Err(cudrv::Error::InvalidArgument(format!("bench {what} is not built yet")))
}
