//! Tensor-memory-accelerator descriptors (`CUtensorMap`) for the sm_90a GEMM kernels.
//!
//! A tensor map tells the TMA how a global array is laid out (dimensions, byte strides, element
//! type) and which box of it one copy moves into shared memory, with which swizzle. The kernels
//! take two maps by value (`__grid_constant__`), so a map is plain 128-byte data here.

use crate::driver::cu;
use crate::error::{bail_invalid, Result};
use crate::memory::DeviceRepr;
use crate::sys;

/// One `CUtensorMap`: 128 opaque bytes, 64-byte aligned, as `cuTensorMapEncodeTiled` writes it.
#[derive(Copy, Clone, Debug)]
#[repr(C, align(64))]
pub(crate) struct TensorMap {
    opaque: [u64; 16],
}
// SAFETY: repr(C) plain data of the size and alignment of the driver's CUtensorMap; the kernels
// receive it by value as an opaque 128-byte, 64-byte-aligned parameter.
unsafe impl DeviceRepr for TensorMap {}

impl TensorMap {
    /// A map for a kernel parameter that the kernel is told not to use.
    pub(crate) fn unused() -> Self {
        TensorMap { opaque: [0; 16] }
    }
}

/// The element types the GEMM kernels move through the TMA.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum TmaElement {
    F16,
    Bf16,
    F32,
}

impl TmaElement {
    fn bytes(self) -> u64 {
        match self {
            TmaElement::F16 | TmaElement::Bf16 => 2,
            TmaElement::F32 => 4,
        }
    }

    fn driver_type(self) -> sys::CUtensorMapDataType {
        match self {
            TmaElement::F16 => sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
            TmaElement::Bf16 => sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
            TmaElement::F32 => sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
        }
    }
}

/// A 3-D view of a strided batch of matrices: `inner` contiguous elements per line, `outer`
/// lines `ld` elements apart, `batch` matrices `stride` elements apart (a `stride` of 0 means one
/// matrix shared by the whole batch: the map then has a batch extent of 1).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct TmaMatrix {
    pub address: u64,
    pub element: TmaElement,
    pub inner: u64,
    pub outer: u64,
    pub ld: u64,
    pub batch: u64,
    pub stride: u64,
}

/// Most elements one tensor-map dimension may span (coordinates are signed 32-bit).
pub(crate) const MAX_EXTENT: u64 = i32::MAX as u64;
/// Byte strides must stay below 2^40.
const MAX_STRIDE_BYTES: u64 = 1 << 40;

impl TmaMatrix {
    /// Whether the TMA can address this matrix: 16-byte aligned base and byte strides, extents
    /// below 2^31, byte strides below 2^40.
    pub fn fits(&self) -> bool {
        let es = self.element.bytes();
        let batched = self.batch > 1 && self.stride != 0;
        self.address % 16 == 0
            && (self.ld * es) % 16 == 0
            && (!batched || (self.stride * es) % 16 == 0)
            && (1..=MAX_EXTENT).contains(&self.inner)
            && (1..=MAX_EXTENT).contains(&self.outer)
            && self.batch <= MAX_EXTENT
            && self.ld.saturating_mul(es) < MAX_STRIDE_BYTES
            && (!batched || self.stride.saturating_mul(es) < MAX_STRIDE_BYTES)
    }

    /// Encodes the map with a `box_inner x box_outer` box (the inner box must be 128 bytes: the
    /// kernels use the 128-byte swizzle), zero fill out of bounds.
    pub fn encode(&self, box_inner: u32, box_outer: u32) -> Result<TensorMap> {
        if !self.fits() {
            bail_invalid!(
                "gemm: the tensor memory accelerator cannot address this operand ({} x {} elements, ld {}, batch stride {}, \
                 address {:#x}): it needs 16-byte alignment and strides, extents below 2^31",
                self.inner,
                self.outer,
                self.ld,
                self.stride,
                self.address
            );
        }
        let es = self.element.bytes();
        if u64::from(box_inner) * es != 128 || box_outer == 0 || box_outer > 256 {
            bail_invalid!("gemm: tensor-map box {box_inner} x {box_outer} does not fit the 128-byte swizzle");
        }
        let batched = self.batch > 1 && self.stride != 0;
        let dims: [u64; 3] = [self.inner, self.outer, if batched { self.batch } else { 1 }];
        // With a batch extent of 1 the batch stride is never used, but the driver still checks
        // it: give it the span of one matrix rounded up to 16 bytes.
        let batch_stride = if batched {
            self.stride * es
        } else {
            (self.ld * es * self.outer)
                .next_multiple_of(16)
                .min(MAX_STRIDE_BYTES - 16)
        };
        let strides: [u64; 2] = [self.ld * es, batch_stride];
        let boxes: [u32; 3] = [box_inner, box_outer, 1];
        let element_strides: [u32; 3] = [1, 1, 1];
        let mut map = TensorMap { opaque: [0; 16] };
        // SAFETY: `map` is a writable 128-byte, 64-byte-aligned CUtensorMap; the dimension,
        // stride, box and element-stride arrays hold rank (3), rank - 1 and rank entries and live
        // across the call; the driver only records the global address, it does not access it.
        unsafe {
            cu!(cuTensorMapEncodeTiled(
                (&mut map as *mut TensorMap).cast::<sys::CUtensorMap>(),
                self.element.driver_type(),
                3,
                self.address as *mut std::ffi::c_void,
                dims.as_ptr(),
                strides.as_ptr(),
                boxes.as_ptr(),
                element_strides.as_ptr(),
                sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
                sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
                sys::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
            ))?;
        }
        Ok(map)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(address: u64, ld: u64, stride: u64, batch: u64) -> TmaMatrix {
        TmaMatrix {
            address,
            element: TmaElement::F16,
            inner: 100,
            outer: 50,
            ld,
            batch,
            stride,
        }
    }

    #[test]
    fn the_tma_needs_16_byte_alignment_and_strides() {
        assert_eq!(std::mem::size_of::<TensorMap>(), 128);
        assert_eq!(std::mem::align_of::<TensorMap>(), 64);
        assert!(m(0x1000, 104, 0, 1).fits());
        assert!(!m(0x1008, 104, 0, 1).fits());
        assert!(!m(0x1000, 100, 0, 1).fits(), "200-byte lines are not a multiple of 16");
        assert!(m(0x1000, 104, 5208, 3).fits());
        assert!(!m(0x1000, 104, 5201, 3).fits());
        assert!(m(0x1000, 104, 5201, 1).fits(), "one matrix: the batch stride is unused");
        assert!(m(0x1000, 104, 0, 3).fits(), "a shared operand has stride 0");
        let mut big = m(0x1000, 1 << 39, 0, 1);
        big.outer = 1;
        assert!(!big.fits(), "strides of 2^40 bytes and more");
    }
}
