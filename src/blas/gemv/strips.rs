//! The row-strip N kernels (`gemv_nr<bytes>_<t>`, and on sm_90 `gemv_nr<bytes>c<C>_<t>` with
//! each strip's columns split over the C blocks of a thread block cluster): which one an op-N
//! GEMV runs, if any (docs/kernels/gemv.md, "Version 5", "16-bit 4-byte strips over half the
//! SMs" and "Row strips split over a cluster").

use std::mem::size_of;
use std::sync::Arc;

use super::GemvType;
use crate::blas::memory_class::fast_memory;
use crate::blas::span;
use crate::context::Context;

/// Warps of a row-strip block (`gemv_nr<bytes>`: block 32 x 16).
pub(super) const NR_WARPS: u32 = 16;
/// Fewest columns for the row strips: each of the 16 warps then takes at least 128.
const NR_MIN_COLS: usize = 2048;
/// Fewest columns per warp where a strip's columns are split over a cluster (6144 columns over
/// 4 blocks of 16 warps, 96 each, ran 21.2 us against 23.8 unsplit; H200, 2026-12-03).
const NR_CLUSTER_MIN_COLS_PER_WARP: usize = 64;
/// The cluster sizes a strip's columns may be split over.
pub(crate) const STRIP_CLUSTERS: [usize; 2] = [2, 4];

/// A row-strip launch: `strips` blocks of rows (grid x), `bytes` per lane, each strip's columns
/// split over `cluster` blocks of a thread block cluster (grid y; 1: no cluster).
///
/// ```ignore
/// let s = Strips { bytes: 8, strips: 64, cluster: 2 };
/// assert_eq!(s.kernel("bf16"), "gemv_nr8c2_bf16");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Strips {
    pub(crate) bytes: usize,
    pub(crate) strips: usize,
    pub(crate) cluster: usize,
}

impl Strips {
    /// The kernel's name for the type suffix `t`.
    pub(crate) fn kernel(&self, t: &str) -> String {
        if self.cluster > 1 {
            format!("gemv_nr{}c{}_{t}", self.bytes, self.cluster)
        } else {
            format!("gemv_nr{}_{t}", self.bytes)
        }
    }

    /// Blocks of the launch.
    pub(crate) fn blocks(&self) -> usize {
        self.strips * self.cluster
    }
}

/// Whether lanes of `bytes` (a whole number of elements) can read an A at `a_ptr` with leading
/// dimension `lda`: both aligned to them.
pub(super) fn lanes_fit<T: GemvType>(bytes: usize, a_ptr: u64, lda: usize) -> bool {
    let elems = bytes / size_of::<T>();
    elems > 0 && bytes % size_of::<T>() == 0 && a_ptr % bytes as u64 == 0 && lda % elems == 0
}

/// Strips of `bytes`-wide lanes (32 lanes each) over `m` rows.
pub(super) fn strips_over<T: GemvType>(bytes: usize, m: usize) -> usize {
    m.div_ceil(32 * bytes / size_of::<T>())
}

/// The row strips an op-N GEMV of an `m x n` A at `a_ptr` with leading dimension `lda` runs on
/// this context's device, if any: [`strip_choice`] with the device's multiprocessors and L2,
/// and, on sm_90 with memory of at least 4 TB/s (an H200), the strips split over a cluster
/// where the driver can keep all their clusters resident at once.
pub(crate) fn row_strips<T: GemvType>(
    ctx: &Arc<Context>,
    m: usize,
    n: usize,
    a_ptr: u64,
    lda: usize,
) -> Option<Strips> {
    let limits = ctx.limits();
    let (sms, l2) = (limits.multiprocessor_count as usize, limits.l2_cache_bytes as usize);
    let clusters = ctx.compute_capability() >= (9, 0) && fast_memory(limits.peak_memory_bandwidth());
    let fit = |bytes: usize, cluster: usize| {
        let name = Strips {
            bytes,
            strips: 0,
            cluster,
        }
        .kernel(T::NAME);
        super::resident_clusters(ctx, &name, (1, cluster as u32, 1), (32, NR_WARPS, 1)).map_or(0, |(_, c)| c)
    };
    strip_choice::<T>(
        m,
        n,
        a_ptr,
        lda,
        sms,
        l2,
        clusters.then_some(&fit as &dyn Fn(usize, usize) -> usize),
    )
}

/// The row-strip launch for an `m x n` A at `a_ptr` with leading dimension `lda` on a device of
/// `sms` multiprocessors and `l2_bytes` of L2 cache, if the strips are the kernels to run.
/// `clusters`, where strips may be split over a cluster, gives how many clusters of `C` blocks
/// of the `bytes`-wide kernel the device holds at once.
///
/// A row strip is one block of 16 warps that reads every column of its rows (4, 8 or 16 bytes
/// per lane) and writes them to y: no split, no workspace. It needs the strips to fit in one
/// wave (one block per multiprocessor; 3/4 of one for 16-bit types' 4-byte lanes) and at least
/// 3/8 of the multiprocessors busy (more than half for 16-bit types' 4-byte lanes); the narrowest
/// lanes that fit are taken (the most blocks); f32 columns not 8-byte aligned take one element
/// per lane. The strips read A with the evict-first hint, so they are kept for an A larger than
/// the L2 cache: a smaller one stays on the kernels that leave it in L2 for the next call (H100,
/// f16 4096^2, 32 MiB, called back to back: 10.2-11.0 us on those, 12.3-13.7 us on strips).
/// H100, 2026-11-22 (`scripts/gemv_probe.cu`, f32, same run): 64-row strips take 4096^2 in
/// 25.2-25.4 us, cuBLAS 25.2-25.5, the cluster kernel 26.4-26.5; 6144^2 51.6 against 54.7 and
/// 52.8; 8192^2 88.9 against 92.5 and 92.5 (the read-only floor: 24.7, 51.0, 88.0).
///
/// With `clusters`, every aligned lane width runs plain or with its columns split over 2 or 4
/// blocks of a cluster (at least 64 columns per warp) where all its clusters are resident at
/// once and its blocks fit one per multiprocessor; of those the launch of the most blocks is
/// taken (of as many: plain 8- or 16-byte lanes, then clusters of 2, of 4, plain 16-bit 4-byte
/// lanes; then the widest lanes), if it keeps 3/8 of the multiprocessors busy. On an H200 half
/// the multiprocessors do not read memory at its rate (2026-12-03, `scripts/gemv_strips.cu`,
/// bf16 N): 8192^2 in 64 plain strips of 8-byte lanes 37.6 us, split in 2 over 128 blocks 33.6
/// (cuBLAS 34.6); 6144^2 on 96 blocks of 4-byte lanes 23.5, of 8-byte lanes split in 2 21.5;
/// 4096 x 11008 on 64 strips of 4-byte lanes split in 2 27.6 (unsplit 33.7); f32 4096 x 11008
/// 47.3 -> 44.2; where plain 8- or 16-byte strips make as many blocks they ran 0-4% faster than
/// pairs (f32 6144^2, f64 4096^2, f16 11008 x 4096); where the clusters did not all fit at once
/// they ran 15-30% slower.
pub(crate) fn strip_choice<T: GemvType>(
    m: usize,
    n: usize,
    a_ptr: u64,
    lda: usize,
    sms: usize,
    l2_bytes: usize,
    clusters: Option<&dyn Fn(usize, usize) -> usize>,
) -> Option<Strips> {
    let a_bytes = span(m, n, lda).map_or(usize::MAX, |e| e.saturating_mul(size_of::<T>()));
    if n < NR_MIN_COLS || a_bytes <= l2_bytes {
        return None;
    }
    let aligned = |bytes: usize| lanes_fit::<T>(bytes, a_ptr, lda);
    let lanes = if aligned(T::STRIP_LANES[0]) {
        T::STRIP_LANES
    } else {
        T::STRIP_FALLBACK
    };
    let strips_of = |bytes: usize| strips_over::<T>(bytes, m);
    // 16-bit types' 4-byte lanes only up to 3/4 of a wave. H100, f16: 6144^2 in 96 strips
    // 30.2 us against 32.4 on the split kernels; 8192^2 in 128 strips 49.0 against 48.2-48.5
    // (and 48.1-48.3 in 64 strips of 8-byte lanes). f32's one-element lanes take a whole
    // wave: the alternative is the element-wise split kernel (f32 4095 x 4097 at lda 4095,
    // 67 MB: 36.7 us against cuBLAS's 26.9, H100, 2026-11-25).
    let narrow16 = |bytes: usize| bytes < 8 && size_of::<T>() < 4;
    let most = |bytes: usize| if narrow16(bytes) { 3 * sms / 4 } else { sms };
    let Some(fit) = clusters else {
        for &bytes in lanes {
            if !aligned(bytes) {
                return None;
            }
            let strips = strips_of(bytes);
            if strips <= most(bytes) {
                // At least 3/8 of the SMs, and for 16-bit types' 4-byte lanes more than half:
                // H100, 2026-11-28 (docs/kernels/gemv.md, "16-bit 4-byte strips over half the
                // SMs"), f16 and bf16 4096 x 11008 in 64 such strips 39.1-39.2 us against
                // 37.0-37.1 on the split kernels; 6144^2 in 96 strips 30.1-30.3 against 32.8-32.9.
                let least = if narrow16(bytes) {
                    2 * strips > sms
                } else {
                    8 * strips >= 3 * sms
                };
                return least.then_some(Strips {
                    bytes,
                    strips,
                    cluster: 1,
                });
            }
        }
        return None;
    };
    // Of as many blocks: plain strips of 8 or 16 bytes per lane, then clusters of 2, then of 4,
    // then 16-bit types' plain 4-byte lanes; of as many again, the widest lanes.
    let rank = |s: &Strips| match s.cluster {
        1 if narrow16(s.bytes) => 0,
        1 => 3,
        2 => 2,
        _ => 1,
    };
    let mut best: Option<Strips> = None;
    for &bytes in lanes.iter().filter(|&&b| aligned(b)) {
        let strips = strips_of(bytes);
        let plain = (strips <= most(bytes)).then_some(Strips {
            bytes,
            strips,
            cluster: 1,
        });
        let split = STRIP_CLUSTERS.iter().filter_map(|&cluster| {
            let wide = n >= cluster * NR_WARPS as usize * NR_CLUSTER_MIN_COLS_PER_WARP;
            let fits = strips * cluster <= sms && strips <= fit(bytes, cluster);
            (wide && fits).then_some(Strips { bytes, strips, cluster })
        });
        for s in plain.into_iter().chain(split) {
            // Lanes come narrowest first: a later one of as many blocks and rank is wider.
            if best.map_or(true, |b| (s.blocks(), rank(&s)) >= (b.blocks(), rank(&b))) {
                best = Some(s);
            }
        }
    }
    best.filter(|s| 8 * s.blocks() >= 3 * sms)
}

#[cfg(test)]
mod tests {
    use super::*;

    const L2: usize = 50 << 20;

    fn plain(bytes: usize, strips: usize) -> Option<Strips> {
        Some(Strips {
            bytes,
            strips,
            cluster: 1,
        })
    }

    #[test]
    fn row_strips_fill_one_wave() {
        let pick = |m, n, ptr, lda| strip_choice::<f32>(m, n, ptr, lda, 132, L2, None);
        // 8-byte lanes (64 f32 rows) while their strips fit one wave and fill 3/8 of it, then 16.
        assert_eq!(pick(4096, 4096, 256, 4096), plain(8, 64));
        assert_eq!(pick(8192, 8192, 256, 8192), plain(8, 128));
        assert_eq!(pick(12288, 4096, 256, 12288), plain(16, 96));
        assert_eq!(pick(4285, 4000, 256, 4288), plain(8, 67));
        assert_eq!(pick(3072, 4096, 256, 3072), None);
        assert_eq!(pick(24576, 4096, 256, 24576), None);
        // Too few columns, misaligned A.
        assert_eq!(pick(4096, 1000, 256, 4096), None);
        assert_eq!(pick(4096, 4096, 2, 4096), None);
        // A or lda not 8-byte aligned: one element per lane (32 rows), up to a whole wave.
        assert_eq!(pick(4096, 4096, 4, 4096), plain(4, 128));
        assert_eq!(pick(4096, 4096, 256, 4097), plain(4, 128));
        assert_eq!(pick(4095, 4097, 256, 4095), plain(4, 128));
        assert_eq!(pick(4225, 4097, 256, 4225), None);
        // The selftest's f32 check of them (3/4 of a wave, odd lda).
        assert_eq!(pick(3165, 4144, 256, 3165), plain(4, 99));
        assert_eq!(pick(1500, 9000, 256, 1501), None);
        let f64s = |m, n, ptr, lda| strip_choice::<f64>(m, n, ptr, lda, 132, L2, None);
        // f64: 32-row strips (one element per lane), then 64-row.
        assert_eq!(f64s(4096, 4096, 256, 4096), plain(8, 128));
        assert_eq!(f64s(6144, 4096, 256, 6144), plain(16, 96));
        assert_eq!(f64s(6144, 4096, 8, 6144), None);
        let f16s = |m, n, ptr, lda| strip_choice::<half::f16>(m, n, ptr, lda, 132, L2, None);
        let bf16s = |m, n, ptr, lda| strip_choice::<half::bf16>(m, n, ptr, lda, 132, L2, None);
        // Not for an A that fits in L2 (f16 4096^2: 32 MiB).
        assert_eq!(f16s(4096, 4096, 256, 4096), None);
        assert_eq!(strip_choice::<f32>(4096, 4096, 256, 4096, 132, 64 << 20, None), None);
        // f16: 4-byte lanes (64 rows) first.
        assert_eq!(f16s(6144, 6144, 256, 6144), plain(4, 96));
        assert_eq!(f16s(16384, 4096, 256, 16384), plain(8, 128));
        assert_eq!(f16s(8192, 8192, 256, 8192), plain(8, 64));
        assert_eq!(bf16s(24576, 4096, 256, 24576), plain(16, 96));
        assert_eq!(bf16s(6144, 6144, 2, 6144), None);
        // 16-bit 4-byte lanes over more than half the SMs: 4096 rows (64 strips) take the
        // split kernels, 4288 rows (67 strips) the strips.
        assert_eq!(f16s(4096, 11008, 256, 4096), None);
        assert_eq!(bf16s(4096, 11008, 256, 4096), None);
        assert_eq!(f16s(4288, 11008, 256, 4288), plain(4, 67));
    }

    #[test]
    fn strips_split_over_clusters_where_they_all_fit() {
        // An H200's cluster occupancy for these kernels (2026-12-03): 66 clusters of 2, 30 of 4.
        let fit = |_bytes: usize, cluster: usize| if cluster == 2 { 66 } else { 30 };
        let fits: &dyn Fn(usize, usize) -> usize = &fit;
        let bf16s = |m, n| strip_choice::<half::bf16>(m, n, 256, m, 132, L2, Some(fits));
        let split = |bytes, strips, cluster| Some(Strips { bytes, strips, cluster });
        // 8192^2: 64 strips of 8-byte lanes in pairs (128 blocks); 4-byte lanes would need 128
        // strips, past 3/4 of a wave, 16-byte ones 32 clusters of 4.
        assert_eq!(bf16s(8192, 8192), split(8, 64, 2));
        // With 32 clusters of 4 resident, pairs still come first at as many blocks.
        let fit_62 = |_bytes: usize, cluster: usize| if cluster == 2 { 132 } else { 62 };
        let fits_62: &dyn Fn(usize, usize) -> usize = &fit_62;
        assert_eq!(
            strip_choice::<half::bf16>(8192, 8192, 256, 8192, 132, L2, Some(fits_62)),
            split(8, 64, 2)
        );
        // 6144^2: 96 blocks every way; pairs before plain 4-byte lanes and clusters of 4.
        assert_eq!(bf16s(6144, 6144), split(8, 48, 2));
        // 4096 x 11008: 4-byte lanes in 64 clusters of 2, 128 blocks.
        assert_eq!(bf16s(4096, 11008), split(4, 64, 2));
        // 11008 x 4096, 12288^2, 16384^2: plain 8-byte strips as many as 16-byte pairs.
        assert_eq!(bf16s(11008, 4096), plain(8, 86));
        assert_eq!(bf16s(12288, 12288), plain(8, 96));
        assert_eq!(bf16s(16384, 16384), plain(8, 128));
        // Where only clusters of 4 fit: 2048 rows in 16 strips of 8-byte lanes, 64 blocks; with
        // 4000 columns (fewer than 64 per warp of 4 blocks) the plain strips of 8192 rows.
        let fit_4 = |_bytes: usize, cluster: usize| if cluster == 2 { 0 } else { 30 };
        let fits_4: &dyn Fn(usize, usize) -> usize = &fit_4;
        let only4 = |m, n| strip_choice::<half::bf16>(m, n, 256, m, 132, L2, Some(fits_4));
        assert_eq!(only4(2048, 16384), split(8, 16, 4));
        assert_eq!(only4(8192, 4000), plain(8, 64));
        // Nothing fits in one wave: no strips.
        assert_eq!(bf16s(40000, 4096), None);
        // f32: plain where as many blocks (8192^2, 6144^2), pairs where they double them.
        let f32s = |m, n| strip_choice::<f32>(m, n, 256, m, 132, L2, Some(fits));
        assert_eq!(f32s(8192, 8192), plain(8, 128));
        assert_eq!(f32s(6144, 6144), plain(8, 96));
        assert_eq!(f32s(4096, 11008), split(8, 64, 2));
        assert_eq!(f32s(4096, 4096), split(8, 64, 2));
        // f64 4096^2: 128 plain 8-byte strips.
        assert_eq!(
            strip_choice::<f64>(4096, 4096, 256, 4096, 132, L2, Some(fits)),
            plain(8, 128)
        );
        // No cluster fits: the plain strips where they are enough.
        let none = |_: usize, _: usize| 0;
        let nones: &dyn Fn(usize, usize) -> usize = &none;
        assert_eq!(
            strip_choice::<half::bf16>(8192, 8192, 256, 8192, 132, L2, Some(nones)),
            plain(8, 64)
        );
        // f32 at an odd lda: the one-element lanes, in clusters too.
        assert_eq!(
            strip_choice::<f32>(4095, 4097, 256, 4095, 132, L2, Some(fits)),
            plain(4, 128)
        );
    }

    #[test]
    fn kernel_names() {
        assert_eq!(
            Strips {
                bytes: 8,
                strips: 64,
                cluster: 2
            }
            .kernel("bf16"),
            "gemv_nr8c2_bf16"
        );
        assert_eq!(
            Strips {
                bytes: 4,
                strips: 99,
                cluster: 1
            }
            .kernel("f32"),
            "gemv_nr4_f32"
        );
        assert_eq!(
            Strips {
                bytes: 16,
                strips: 24,
                cluster: 4
            }
            .blocks(),
            96
        );
    }
}
