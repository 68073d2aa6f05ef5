//! What the autotuner searches and how a block size becomes a launch: the grid rule, the
//! dynamic shared memory rule, the measurement and re-tuning settings.

use crate::launch::LaunchConfig;

/// How the grid follows from the problem size and the block size.
///
/// ```
/// use cudrv::tune::GridRule;
/// assert_eq!(GridRule::PerItem { items_per_thread: 1 }.blocks(1000, 256, 0), 4);
/// assert_eq!(GridRule::PerItem { items_per_thread: 4 }.blocks(1000, 128, 0), 2);
/// // A grid-stride kernel: as many blocks as fit on the device at once (given here as 264).
/// assert_eq!(GridRule::FillDevice.blocks(1 << 30, 256, 264), 264);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GridRule {
    /// One thread per `items_per_thread` items: `ceil(size / (block * items_per_thread))` blocks.
    PerItem {
        /// Items each thread handles (at least 1).
        items_per_thread: u32,
    },
    /// As many blocks as are resident on the device at once (the occupancy API's blocks per
    /// multiprocessor times the multiprocessors), for grid-stride kernels; never more blocks
    /// than one thread per item needs.
    FillDevice,
}

impl Default for GridRule {
    fn default() -> Self {
        GridRule::PerItem { items_per_thread: 1 }
    }
}

impl GridRule {
    /// Blocks for `size` items in blocks of `block` threads; `resident` is the device-filling
    /// block count for this block size (used by [`GridRule::FillDevice`]). At least one block,
    /// at most `u32::MAX`.
    pub fn blocks(&self, size: u64, block: u32, resident: u32) -> u32 {
        let block = u64::from(block.max(1));
        let per_item = |items: u64| size.div_ceil(block * items.max(1)).clamp(1, u64::from(u32::MAX)) as u32;
        match *self {
            GridRule::PerItem { items_per_thread } => per_item(u64::from(items_per_thread)),
            GridRule::FillDevice => resident.max(1).min(per_item(1)),
        }
    }

    /// A short stable name (part of the tuning cache's key).
    pub(crate) fn tag(&self) -> String {
        match self {
            GridRule::PerItem { items_per_thread } => format!("item{items_per_thread}"),
            GridRule::FillDevice => "fill".into(),
        }
    }
}

/// Which block sizes a search may try. The kernel must compute the right thing with every one
/// of them: a kernel written for power-of-two blocks (a tree reduction that halves
/// `blockDim.x`) must say [`BlockSizes::PowersOfTwo`].
///
/// ```
/// use cudrv::tune::BlockSizes;
/// assert_eq!(BlockSizes::Warps.sizes(32, 128), vec![32, 64, 96, 128]);
/// assert_eq!(BlockSizes::PowersOfTwo.sizes(32, 1024), vec![32, 64, 128, 256, 512, 1024]);
/// // A list keeps the sizes the kernel allows, in increasing order, each once.
/// assert_eq!(BlockSizes::Only(vec![512, 2048, 64, 64]).sizes(32, 1024), vec![64, 512]);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum BlockSizes {
    /// Every multiple of the warp size (the default).
    #[default]
    Warps,
    /// Powers of two from the warp size.
    PowersOfTwo,
    /// These sizes only.
    Only(Vec<u32>),
}

impl BlockSizes {
    /// The sizes to try for a warp of `warp` threads and blocks of at most `max` threads.
    pub fn sizes(&self, warp: u32, max: u32) -> Vec<u32> {
        let warp = warp.max(1);
        match self {
            BlockSizes::Warps => (1..=max / warp).map(|k| k * warp).collect(),
            BlockSizes::PowersOfTwo => std::iter::successors(Some(warp.next_power_of_two()), |b| b.checked_mul(2))
                .take_while(|&b| b <= max)
                .collect(),
            BlockSizes::Only(list) => {
                let mut v: Vec<u32> = list.iter().copied().filter(|&b| b > 0 && b <= max).collect();
                v.sort_unstable();
                v.dedup();
                v
            }
        }
    }

    fn tag(&self) -> String {
        match self {
            BlockSizes::Warps => "warps".into(),
            BlockSizes::PowersOfTwo => "pow2".into(),
            BlockSizes::Only(list) => {
                let mut v = list.clone();
                v.sort_unstable();
                v.dedup();
                format!("only{}", v.iter().map(u32::to_string).collect::<Vec<_>>().join(","))
            }
        }
    }
}

/// Dynamic shared memory per block: `fixed + per_thread * block` bytes.
///
/// ```
/// use cudrv::tune::SharedRule;
/// // A tile of one float per thread plus a 64-float halo.
/// let rule = SharedRule { fixed: 256, per_thread: 4 };
/// assert_eq!(rule.bytes(128), 768);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SharedRule {
    /// Bytes whatever the block size.
    pub fixed: u32,
    /// Bytes per thread of the block.
    pub per_thread: u32,
}

impl SharedRule {
    /// The bytes a block of `block` threads asks for (saturating).
    pub fn bytes(&self, block: u32) -> u32 {
        self.fixed.saturating_add(self.per_thread.saturating_mul(block))
    }
}

/// What a tuned kernel's launches look like and how the tuner measures and re-tunes them.
///
/// ```
/// use cudrv::tune::{GridRule, SharedRule, TuneOptions};
/// let opts = TuneOptions {
///     grid: GridRule::PerItem { items_per_thread: 1 },
///     shared: SharedRule { fixed: 256, per_thread: 4 },
///     ..TuneOptions::default()
/// };
/// assert_eq!(opts.config(1000, 128, 0).shared_mem_bytes, 768);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct TuneOptions {
    /// How the grid follows from the size.
    pub grid: GridRule,
    /// Dynamic shared memory per block.
    pub shared: SharedRule,
    /// The block sizes to try.
    pub blocks: BlockSizes,
    /// Device time each measurement aims at, microseconds: a candidate is launched as many
    /// times as take about this long (at least once), and timed with one pair of events.
    pub batch_us: f64,
    /// Candidates (the fastest of the first pass) measured again, interleaved, to settle the
    /// choice.
    pub finalists: usize,
    /// Interleaved rounds in the second pass; each finalist's figure is its median.
    pub rounds: usize,
    /// Weight of a new observation in the moving average ([`super::TunedKernel::observe`]).
    pub ema_alpha: f64,
    /// A size bucket is tuned again when its moving average exceeds the tuned time by this
    /// fraction (0.25: 25% slower than when it was tuned).
    pub drift: f64,
    /// A size bucket is tuned again after this many cache hits (`None`: never for this reason).
    pub retune_every: Option<u64>,
}

impl Default for TuneOptions {
    fn default() -> Self {
        TuneOptions {
            grid: GridRule::default(),
            shared: SharedRule::default(),
            blocks: BlockSizes::default(),
            batch_us: 300.0,
            finalists: 4,
            rounds: 5,
            ema_alpha: 0.1,
            drift: 0.25,
            retune_every: None,
        }
    }
}

impl TuneOptions {
    /// The launch for `size` items in blocks of `block` threads (`resident`: the
    /// device-filling block count, for [`GridRule::FillDevice`]).
    pub fn config(&self, size: u64, block: u32, resident: u32) -> LaunchConfig {
        LaunchConfig {
            grid_dim: (self.grid.blocks(size, block, resident), 1, 1),
            block_dim: (block, 1, 1),
            shared_mem_bytes: self.shared.bytes(block),
        }
    }

    /// The part of the cache key the options decide (what a remembered block size means).
    pub(crate) fn tag(&self) -> String {
        format!(
            "{}|smem{}+{}|{}",
            self.grid.tag(),
            self.shared.fixed,
            self.shared.per_thread,
            self.blocks.tag()
        )
    }
}
