//! The profiler's statistics, flags and exports, without a GPU.

use cudrv::profile::{summarize, Flag, Report, Sample, Timing};

fn sample(name: &str, stream: u64, start: f64, d: f64) -> Sample {
    Sample {
        name: name.into(),
        stream,
        start_us: start,
        duration_us: d,
        flops: 0.0,
        bytes: 0.0,
    }
}

#[test]
fn statistics_follow_their_definitions() {
    let d: Vec<f64> = (1..=100).map(|i| i as f64).collect();
    let samples: Vec<Sample> = d.iter().map(|&x| sample("k", 0, 0.0, x)).collect();
    let s = &summarize(&samples)[0];
    assert_eq!((s.count, s.min_us, s.max_us), (100, 1.0, 100.0));
    assert_eq!(s.total_us, 5050.0);
    assert_eq!(s.mean_us, 50.5);
    assert_eq!((s.p50_us, s.p99_us), (50.0, 99.0));
    let var: f64 = d.iter().map(|x| (x - 50.5) * (x - 50.5)).sum::<f64>() / 100.0;
    assert!((s.std_us - var.sqrt()).abs() < 1e-12);
    assert!((s.cv - var.sqrt() / 50.5).abs() < 1e-12);
    // One sample: no spread, no flags from spread.
    let one = &summarize(&[sample("k", 0, 0.0, 3.0)])[0];
    assert_eq!((one.std_us, one.cv, one.p99_us), (0.0, 0.0, 3.0));
    assert!(one.flags.is_empty());
}

#[test]
fn flags_and_advice() {
    let slow: Vec<Sample> = (0..5).map(|_| sample("slow", 0, 0.0, 6000.0)).collect();
    let s = &summarize(&slow)[0];
    assert_eq!(s.flags, vec![Flag::Slow]);
    assert!(s.advice[0].contains("6.0 ms"), "{:?}", s.advice);
    let noisy: Vec<Sample> = [10.0, 30.0, 10.0, 30.0]
        .iter()
        .map(|&d| sample("noisy", 0, 0.0, d))
        .collect();
    assert!(summarize(&noisy)[0].flags.contains(&Flag::HighVariance));
    let tiny: Vec<Sample> = (0..200).map(|_| sample("tiny", 0, 0.0, 2.0)).collect();
    let t = &summarize(&tiny)[0];
    assert_eq!(t.flags, vec![Flag::LaunchBound]);
    assert!(t.advice[0].contains("graph"), "{:?}", t.advice);
    let steady: Vec<Sample> = (0..50).map(|_| sample("steady", 0, 0.0, 20.0)).collect();
    assert!(summarize(&steady)[0].flags.is_empty());
}

#[test]
fn kernels_are_ordered_by_total_time_and_exports_parse() {
    let r = Report::from_samples(vec![
        sample("a", 1, 0.0, 1.0),
        sample("b", 2, 0.5, 10.0),
        sample("a", 1, 2.0, 1.0),
    ]);
    assert_eq!(
        r.kernels.iter().map(|k| k.name.as_str()).collect::<Vec<_>>(),
        ["b", "a"]
    );
    let table = r.table();
    assert!(table.lines().count() >= 3 && table.contains("kernel"), "{table}");
    let json: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
    assert_eq!(json["kernels"][1]["count"], 2);
    let trace: serde_json::Value = serde_json::from_str(&r.chrome_trace()).unwrap();
    let events = trace["traceEvents"].as_array().unwrap();
    let spans: Vec<_> = events.iter().filter(|e| e["ph"] == "X").collect();
    assert_eq!(spans.len(), 3);
    assert_eq!(spans[1]["dur"], 10.0);
    assert_eq!(
        events.iter().filter(|e| e["ph"] == "M").count(),
        2,
        "a track per stream"
    );
}

#[test]
fn work_gives_rates_and_launch_shapes_give_advice() {
    // Two launches of 10 and 30 us, each credited with 2e9 FLOPs and 4e8 bytes: 4e9 FLOPs and
    // 8e8 bytes in 40 us are 100 TFLOP/s and 20000 GB/s.
    let mut samples: Vec<Sample> = [10.0, 30.0].iter().map(|&d| sample("gemm / k", 0, 0.0, d)).collect();
    for s in &mut samples {
        (s.flops, s.bytes) = (2e9, 4e8);
    }
    let mut k = summarize(&samples).remove(0);
    assert!((k.tflops.unwrap() - 100.0).abs() < 1e-9, "{:?}", k.tflops);
    assert!((k.gbps.unwrap() - 20_000.0).abs() < 1e-6, "{:?}", k.gbps);
    assert!(summarize(&[sample("plain", 0, 0.0, 5.0)])[0].tflops.is_none());
    // 512 of 2048 threads per SM resident; the suggestion keeps 1024 (twice): flagged. A grid
    // of 8 blocks on 132 SMs: flagged.
    k.judge_launch([8, 1, 1], [256, 1, 1], (512, 2048), Some((128, 1024)), 132);
    assert_eq!(k.occupancy, Some(0.25));
    assert!(k.flags.contains(&Flag::LowOccupancy) && k.flags.contains(&Flag::SmallGrid));
    let table = Report {
        kernels: vec![k.clone()],
        samples: samples.clone(),
        dropped_samples: 0,
        timing: None,
        why_not_cupti: None,
    }
    .table();
    assert!(
        table.contains("blocks of 128 (the occupancy API's suggestion) keep 1024"),
        "{table}"
    );
    assert!(table.contains("8 blocks for 132 SMs"), "{table}");
    // A suggestion that keeps less than a quarter more, and a grid of a quarter of the SMs or
    // more: nothing to say.
    let mut quiet = summarize(&samples).remove(0);
    quiet.judge_launch([33, 1, 1], [256, 1, 1], (1024, 2048), Some((384, 1152)), 132);
    assert!(quiet.flags.is_empty(), "{:?}", quiet.flags);
    // A short kernel (median under 10 us) is not judged by its shape.
    let mut short = summarize(&[sample("s", 0, 0.0, 4.0)]).remove(0);
    short.judge_launch([1, 1, 1], [32, 1, 1], (32, 2048), Some((1024, 2048)), 132);
    assert!(short.flags.is_empty() && short.occupancy.is_some());
}

#[test]
fn sampled_counts_and_a_dropped_trace_are_said_in_the_table() {
    let samples: Vec<Sample> = [4.0, 6.0, 5.0].iter().map(|&d| sample("k", 0, 0.0, d)).collect();
    let mut k = summarize(&samples).remove(0);
    assert_eq!((k.count, k.launches), (3, 3));
    // Sampled: 3 of 48 launches timed; 2 older timed launches left the trace.
    k.launches = 48;
    let r = Report {
        kernels: vec![k],
        samples: samples[1..].to_vec(),
        dropped_samples: 2,
        timing: Some(Timing::Events),
        why_not_cupti: Some("CUPTI is held by another subscriber".into()),
    };
    let table = r.table();
    assert!(table.contains("3/48"), "{table}");
    assert!(table.contains("timed/launched"), "{table}");
    assert!(table.contains("2 earlier launches"), "{table}");
    let json: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
    assert_eq!(
        (
            json["kernels"][0]["launches"].as_u64(),
            json["dropped_samples"].as_u64()
        ),
        (Some(48), Some(2))
    );
    // How the launches were timed, and why not with CUPTI.
    assert_eq!(json["timing"], "events");
    assert_eq!(json["why_not_cupti"], "CUPTI is held by another subscriber");
    // Unsampled, nothing dropped: neither line; a report of bare samples says no timing.
    let bare = Report::from_samples(samples.clone());
    let json: serde_json::Value = serde_json::from_str(&bare.to_json()).unwrap();
    assert!(
        json.get("timing").is_none() && json.get("why_not_cupti").is_none(),
        "{json}"
    );
    let plain = Report::from_samples(samples).table();
    assert!(
        !plain.contains("timed/launched") && !plain.contains("earlier launches"),
        "{plain}"
    );
}
