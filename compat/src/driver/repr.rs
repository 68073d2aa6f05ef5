//! The marker traits of values a kernel or a copy can take: [`DeviceRepr`] and [`ValidAsZeroBits`].

// ---------------------------------------------------------------------------------------------
// Marker traits
// ---------------------------------------------------------------------------------------------

/// A type that can be copied to device memory and passed to a kernel by value.
///
/// This is compat's own trait with cudarc's shape (no supertraits), not cudrv's
/// [`cudrv::DeviceRepr`] (which requires `Copy + 'static`): a cudarc user's
/// `unsafe impl DeviceRepr for MyStruct {}` keeps compiling whether or not the struct is `Copy`,
/// and `bool` / `i128` / `u128` stay implemented as in cudarc.
///
/// # Safety
/// The type's bytes must be what the device code expects (`#[repr(C)]` or a primitive), and
/// every bit pattern a kernel may write must be a valid value of the type.
///
/// ```
/// #[derive(Clone, Copy)]
/// #[repr(C)]
/// struct Params { n: u32, scale: f32 }
/// // SAFETY: repr(C) plain data; every bit pattern is a valid Params.
/// unsafe impl cudrv_compat::imp::driver::DeviceRepr for Params {}
/// ```
pub unsafe trait DeviceRepr {}

/// A type for which all-zero bytes are a valid value (so `alloc_zeros` may produce it).
///
/// # Safety
/// All-zero bytes must be a valid value of the type.
///
/// ```no_run
/// # use cudrv_compat::imp::driver::*;
/// # use std::sync::Arc;
/// # let ctx = CudaContext::new(0)?;
/// # let stream = ctx.default_stream();
/// #[derive(Clone, Copy)]
/// #[repr(C)]
/// struct Pair { a: f32, b: u32 }
/// // SAFETY: plain data, no padding.
/// unsafe impl DeviceRepr for Pair {}
/// // SAFETY: zero bytes are (0.0, 0).
/// unsafe impl ValidAsZeroBits for Pair {}
/// let pairs = stream.alloc_zeros::<Pair>(100)?;
/// # drop(pairs);
/// # Ok::<(), DriverError>(())
/// ```
pub unsafe trait ValidAsZeroBits {}

macro_rules! plain {
    ($($t:ty),*) => {$(
        // SAFETY: a primitive: fixed layout, zero is a valid value.
        unsafe impl DeviceRepr for $t {}
        // SAFETY: as above.
        unsafe impl ValidAsZeroBits for $t {}
    )*};
}
plain!(
    bool,
    i8,
    i16,
    i32,
    i64,
    i128,
    isize,
    u8,
    u16,
    u32,
    u64,
    u128,
    usize,
    f32,
    f64,
    half::f16,
    half::bf16
);

// SAFETY: an array of device-representable values has the element's layout, repeated.
unsafe impl<T: DeviceRepr, const N: usize> DeviceRepr for [T; N] {}
// SAFETY: an array of zeroable values is zeroable.
unsafe impl<T: ValidAsZeroBits, const N: usize> ValidAsZeroBits for [T; N] {}

macro_rules! zero_tuples {
    ($($t:ident),+) => {
        // SAFETY: a tuple of zeroable values is zeroable.
        unsafe impl<$($t: ValidAsZeroBits),+> ValidAsZeroBits for ($($t,)+) {}
    };
}
zero_tuples!(A);
zero_tuples!(A, B);
zero_tuples!(A, B, C);
zero_tuples!(A, B, C, D);
zero_tuples!(A, B, C, D, E);
zero_tuples!(A, B, C, D, E, F);
zero_tuples!(A, B, C, D, E, F, G);
zero_tuples!(A, B, C, D, E, F, G, H);
zero_tuples!(A, B, C, D, E, F, G, H, I);
zero_tuples!(A, B, C, D, E, F, G, H, I, J);
zero_tuples!(A, B, C, D, E, F, G, H, I, J, K);
zero_tuples!(A, B, C, D, E, F, G, H, I, J, K, L);
