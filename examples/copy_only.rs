//! The smallest useful program: copy a buffer to the GPU and back, using none of cudrv's
//! kernels. Its stripped release binary is the size every program that links cudrv starts
//! from (docs/PERFORMANCE.md, "Binary and crate sizes").
//!
//! Run: `cargo run --release --example copy_only`.

use cudrv::{Context, DeviceBuffer, DeviceSlice};

fn main() -> Result<(), cudrv::Error> {
    let ctx = Context::new(0)?;
    let stream = ctx.default_stream();
    let host: Vec<u32> = (0..1 << 20).collect();
    let device = DeviceBuffer::from_slice(&stream, &host)?;
    let back = device.to_vec()?;
    assert_eq!(back, host);
    println!(
        "copied {} bytes there and back on {}",
        host.len() * 4,
        ctx.device().name()?
    );
    Ok(())
}
