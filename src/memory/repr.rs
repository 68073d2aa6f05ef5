//! Marker traits for values that may cross to the device.

/// A type whose values can be copied to the device byte for byte and used there as the same
/// type: plain data with a layout the kernel agrees on (`#[repr(C)]` or a primitive), no
/// pointers to host memory, no `Drop`.
///
/// # Safety
/// Implement only for `Copy` types with a stable layout that the device code reads the same way,
/// and whose every bit pattern a kernel may write is a valid value of the type (device memory is
/// copied back to the host without checks).
///
/// ```
/// #[derive(Copy, Clone)]
/// #[repr(C)]
/// struct Params { n: u32, alpha: f32 }
/// // SAFETY: repr(C), plain data, every bit pattern is a valid Params.
/// unsafe impl cudrv::DeviceRepr for Params {}
/// ```
pub unsafe trait DeviceRepr: Copy + 'static {}

/// A type for which all-zero bytes are a valid value, so buffers of it may be zero-filled.
///
/// # Safety
/// All-zero bytes must be a valid value of the type.
///
/// ```no_run
/// use cudrv::memory::{DeviceRepr, ValidAsZeroBits};
/// use cudrv::DeviceBuffer;
/// #[derive(Copy, Clone)]
/// #[repr(C)]
/// struct Particle { pos: [f32; 3], mass: f32 }
/// // SAFETY: plain old data, no padding, any bits are a value.
/// unsafe impl DeviceRepr for Particle {}
/// // SAFETY: all-zero bytes are the particle at the origin with mass 0.
/// unsafe impl ValidAsZeroBits for Particle {}
/// let ctx = cudrv::Context::new(0)?;
/// let stream = ctx.new_stream()?;
/// let particles = DeviceBuffer::<Particle>::zeroed(&stream, 1000)?;
/// # drop(particles);
/// # Ok::<(), cudrv::Error>(())
/// ```
pub unsafe trait ValidAsZeroBits: DeviceRepr {}

macro_rules! plain_data {
    ($($t:ty),*) => {$(
        // SAFETY: a primitive number: fixed layout, every bit pattern valid, zero is valid.
        unsafe impl DeviceRepr for $t {}
        // SAFETY: as above.
        unsafe impl ValidAsZeroBits for $t {}
    )*};
}
plain_data!(
    u8,
    i8,
    u16,
    i16,
    u32,
    i32,
    u64,
    i64,
    usize,
    isize,
    f32,
    f64,
    half::f16,
    half::bf16
);

// SAFETY: an array of plain data is plain data with the element's properties.
unsafe impl<T: DeviceRepr, const N: usize> DeviceRepr for [T; N] {}
// SAFETY: as above.
unsafe impl<T: ValidAsZeroBits, const N: usize> ValidAsZeroBits for [T; N] {}
