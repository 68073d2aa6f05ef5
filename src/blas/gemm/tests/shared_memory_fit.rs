//! The automatic choice on devices that give a block less shared memory than its tile needs.

use super::*;
use crate::blas::gemm::dispatch::choose_within;

/// RTX 30 / 40 series (compute capability 8.6 / 8.9): 99 KiB of shared memory per block.
const ROOM_99K: u32 = 101_376;
/// A100 (8.0): 163 KiB.
const ROOM_163K: u32 = 166_912;

/// The choice for `g` on a device of compute capability `cc` with `sms` multiprocessors and
/// `room` bytes of shared memory per block, operands at 256-byte aligned addresses.
fn choice(g: &Gemm<f32>, cc: (u32, u32), sms: usize, room: u32) -> Result<Choice> {
    let plan = g.plan([1 << 28; 3], None).unwrap();
    let p = g.params(&plan, [1 << 20, 1 << 21, 1 << 22], 0);
    choose_within::<f32, f32>(g, &plan, &p, (cc, sms, false), room)
}

#[test]
fn f32_takes_the_128_by_128_tiles_where_128_by_256_does_not_fit() {
    for (ta, tb) in [
        (Transpose::N, Transpose::N),
        (Transpose::T, Transpose::N),
        (Transpose::N, Transpose::T),
        (Transpose::T, Transpose::T),
    ] {
        let g = Gemm::<f32>::new(ta, tb, 4096, 4096, 4096);
        // Where it fits (A100, H100), the 128 x 256 tile.
        for (cc, sms, room) in [((8, 0), 108, ROOM_163K), ((9, 0), 132, 232_448)] {
            let c = choice(&g, cc, sms, room).unwrap();
            assert!(c.name.contains("_w_"), "{ta:?}{tb:?} {cc:?}: {}", c.name);
        }
        // 99 KiB: a 128 x 128 tile, within the room, it and its fallback.
        for cc in [(8, 6), (8, 9)] {
            let c = choice(&g, cc, 128, ROOM_99K).unwrap();
            assert!(c.smem <= ROOM_99K, "{ta:?}{tb:?} {cc:?}: {} asks {}", c.name, c.smem);
            assert_eq!(c.tile, (128, 128), "{ta:?}{tb:?} {cc:?}: {}", c.name);
            if let Some(f) = &c.fallback {
                assert!(f.smem <= ROOM_99K, "{}'s fallback {} asks {}", c.name, f.name, f.smem);
            }
        }
    }
}

#[test]
fn forced_tiles_and_small_problems_are_left_as_they_are() {
    // A forced 128 x 256 tile stays (its launch reports the device's shortfall).
    let g = Gemm::<f32>::new(Transpose::N, Transpose::N, 4096, 4096, 4096).tile(Tile::Wide);
    let c = choice(&g, (8, 9), 128, ROOM_99K).unwrap();
    assert!(c.name.contains("_w_") && c.smem > ROOM_99K, "{}", c.name);
    // Choices that fit are not remade.
    let small = Gemm::<f32>::new(Transpose::N, Transpose::N, 256, 256, 256);
    let plan = small.plan([1 << 20; 3], None).unwrap();
    let p = small.params(&plan, [1 << 20, 1 << 21, 1 << 22], 0);
    let direct = crate::blas::gemm::dispatch::choose_on::<f32, f32>(&small, &plan, &p, (8, 9), 128, false).unwrap();
    assert_eq!(choice(&small, (8, 9), 128, ROOM_99K).unwrap().name, direct.name);
}
