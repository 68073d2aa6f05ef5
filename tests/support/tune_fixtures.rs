//! The autotuner's fixtures (tests/data/tune_fixtures.cu): three kernels whose speed depends on
//! the block size, each with its inputs, its launch and a check of its output against an f64
//! CPU reference. Used by tests/gpu_tune.rs and `cudrv bench tune`.

use std::sync::Arc;

use cudrv::selftest::Rng;
use cudrv::tune::{GridRule, SharedRule, TuneOptions};
use cudrv::{DeviceBuffer, DeviceSlice, DeviceSliceMut, Function, LaunchConfig, Module, Stream};

/// The fixtures' PTX (NVRTC 12.0, compute_80).
pub const PTX: &str = include_str!("../data/tune_fixtures.ptx");

/// The stencil's radius (tune_stencil: 2 * RADIUS + 1 taps).
const RADIUS: i64 = 32;

/// One fixture: a kernel, its size and its launch rule.
#[derive(Clone, Copy, Debug)]
pub struct Fixture {
    /// The kernel's name in the PTX.
    pub kernel: &'static str,
    /// Items.
    pub size: usize,
}

/// The three fixtures.
pub const FIXTURES: [Fixture; 3] = [
    Fixture {
        kernel: "tune_block_sum",
        size: 1 << 24,
    },
    Fixture {
        kernel: "tune_stencil",
        size: (1 << 24) + 13,
    },
    Fixture {
        kernel: "tune_poly",
        size: 1 << 22,
    },
];

impl Fixture {
    /// How its launches are shaped.
    pub fn options(&self) -> TuneOptions {
        match self.kernel {
            "tune_stencil" => TuneOptions {
                shared: SharedRule {
                    fixed: (2 * RADIUS as u32) * 4,
                    per_thread: 4,
                },
                ..TuneOptions::default()
            },
            "tune_poly" => TuneOptions {
                grid: GridRule::FillDevice,
                ..TuneOptions::default()
            },
            _ => TuneOptions::default(),
        }
    }
}

/// A fixture loaded with fresh random inputs.
pub struct Loaded {
    pub fixture: Fixture,
    pub function: Function,
    pub stream: Arc<Stream>,
    x: Vec<f32>,
    dx: DeviceBuffer<f32>,
    pub y: DeviceBuffer<f32>,
}

/// Loads the fixtures' module (`extra` appended to the PTX, e.g. a comment that changes its
/// digest).
pub fn module(stream: &Arc<Stream>, extra: &str) -> cudrv::Result<Arc<Module>> {
    Module::from_ptx(stream.context(), &format!("{PTX}{extra}"), "tune_fixtures")
}

impl Loaded {
    pub fn new(fixture: Fixture, module: &Arc<Module>, stream: &Arc<Stream>, seed: u64) -> cudrv::Result<Loaded> {
        let lo = if fixture.kernel == "tune_block_sum" { 0.0 } else { -1.0 };
        let x: Vec<f32> = Rng::new(seed).vec(fixture.size, lo, 1.0);
        let ylen = if fixture.kernel == "tune_block_sum" {
            1
        } else {
            fixture.size
        };
        Ok(Loaded {
            fixture,
            function: module.function(fixture.kernel)?,
            stream: stream.clone(),
            dx: DeviceBuffer::from_slice(stream, &x)?,
            y: DeviceBuffer::from_slice(stream, &vec![f32::NAN; ylen])?,
            x,
        })
    }

    /// One launch with `cfg`.
    pub fn launch(&self, cfg: &LaunchConfig) -> cudrv::Result<()> {
        let n = self.fixture.size as u64;
        let mut l = self.stream.launch_builder(&self.function);
        l.arg(&self.dx).arg(&self.y).arg(&n);
        // SAFETY: every fixture is (const float* x, float* y, unsigned long long n), x and y
        // hold n elements (y one for tune_block_sum), and the launch's shared memory is what
        // the fixture's rule gives.
        unsafe { l.launch(*cfg) }
    }

    /// Runs one launch with `cfg` on poisoned (or, for the sum, zeroed) output and checks it
    /// against the f64 reference; `Err` says what differs. Returns the output.
    pub fn check(&mut self, cfg: &LaunchConfig) -> Result<Vec<f32>, String> {
        let fill = if self.fixture.kernel == "tune_block_sum" {
            0.0
        } else {
            f32::NAN
        };
        let e = |e: cudrv::Error| e.to_string();
        self.y.copy_from_slice(&vec![fill; self.y.len()]).map_err(e)?;
        self.launch(cfg).map_err(e)?;
        let y = self.y.to_vec().map_err(e)?;
        let n = self.fixture.size;
        let mut rng = Rng::new(n as u64 ^ 0x7e57);
        let samples: Vec<usize> = (0..4096)
            .map(|_| (rng.next_u64() % n as u64) as usize)
            .chain([0, 1, n - 1, n - 2])
            .collect();
        match self.fixture.kernel {
            "tune_block_sum" => {
                let want: f64 = self.x.iter().map(|&v| f64::from(v)).sum();
                let got = f64::from(y[0]);
                if (got - want).abs() > 1e-3 * want.abs() {
                    return Err(format!("sum {got} but the f64 reference is {want} ({cfg:?})"));
                }
            }
            "tune_stencil" => {
                for &i in &samples {
                    let want: f64 = (-RADIUS..=RADIUS)
                        .map(|j| i as i64 + j)
                        .filter(|&g| g >= 0 && g < n as i64)
                        .map(|g| f64::from(self.x[g as usize]))
                        .sum::<f64>()
                        / 65.0;
                    if (f64::from(y[i]) - want).abs() > 1e-5 || y[i].is_nan() {
                        return Err(format!("y[{i}] = {} but the reference is {want} ({cfg:?})", y[i]));
                    }
                }
            }
            _ => {
                for &i in &samples {
                    let want = poly(f64::from(self.x[i]));
                    if (f64::from(y[i]) - want).abs() > 1e-4 * want.abs().max(1.0) || y[i].is_nan() {
                        return Err(format!("y[{i}] = {} but the reference is {want} ({cfg:?})", y[i]));
                    }
                }
            }
        }
        Ok(y)
    }
}

/// tune_poly's chain in f64.
fn poly(v: f64) -> f64 {
    let mut acc: Vec<f64> = (0..64).map(|k| v * (k + 1) as f64 * 0.01).collect();
    for _ in 0..16 {
        for k in 0..64 {
            acc[k] = (acc[k] * acc[(k + 29) % 64] + 0.5) * 0.5;
        }
    }
    acc.iter().sum()
}
