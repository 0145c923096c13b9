//! `elbow bench`: the headless speed figures of [`elbow::bench`], as a table or JSON.

use super::{count, print_json};
use clap::Args;
use elbow::bench::{ACCURACY_CHECK_EVERY, measure};

/// Arguments of `elbow bench`.
#[derive(Debug, Args)]
pub(crate) struct BenchArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Training steps timed for the throughput figure, 10 to 200000.
    #[arg(long, default_value_t = 2000, value_parser = count::<10, 200_000>, allow_hyphen_values = true)]
    train_steps: usize,
    /// Also time the plant experiments' default runs (degradation, randomization, tracking),
    /// wall seconds on every core: about a minute more on two cores.
    #[arg(long)]
    experiments: bool,
}

/// What `elbow bench --json` prints: the figures, and the experiments' times when asked for.
#[derive(serde::Serialize)]
struct Report {
    #[serde(flatten)]
    figures: elbow::bench::BenchReport,
    #[serde(skip_serializing_if = "Option::is_none")]
    experiments: Option<elbow::bench::ExperimentTimes>,
}

/// `elbow bench`.
pub(crate) fn run(args: &BenchArgs) -> Result<(), String> {
    if !args.json {
        // A note on stderr (the measurement takes several seconds).
        super::note(format_args!("measuring (several seconds; Ctrl-C stops)..."));
    }
    let r = measure(args.train_steps)?;
    let experiments = if args.experiments {
        if !args.json {
            super::note(format_args!("timing the plant experiments' default runs (about a minute)..."));
        }
        let t = elbow::bench::measure_experiments(|| !super::signals::interrupted())?;
        if super::signals::interrupted() {
            return Err("interrupted".into());
        }
        Some(t)
    } else {
        None
    };
    if args.json {
        return print_json(&Report { figures: r, experiments });
    }
    outln!(
        "analytic solve, nearest  {:>10.1} ns   ({:.1} M solves/s; both branches)",
        r.analytic_ns,
        1e3 / r.analytic_ns
    );
    outln!(
        "analytic solve, 1 branch {:>10.1} ns   ({:.1} M solves/s)",
        r.analytic_one_branch_ns,
        1e3 / r.analytic_one_branch_ns
    );
    outln!(
        "DLS warm-start solve     {:>10.1} ns   ({:.2} iterations on average)",
        r.dls_warm_ns,
        r.dls_warm_iterations
    );
    outln!(
        "MDN training (f32, b256) {:>10.2} M samples/s  = {:.1} GFLOP/s ({:.0} FLOP/sample)",
        r.mdn_train_samples_per_second / 1e6,
        r.train_gflops,
        r.flops_per_sample
    );
    outln!(
        "core FMA peak            {:>10.1} GFLOP/s ({}), training reaches {:.0}% of it (kernels: {})",
        r.fma_peak_gflops,
        r.fma_kernel,
        r.train_percent_of_peak,
        r.simd_level
    );
    outln!(
        "batched inference        {:>10.2} M targets/s = {:.1} GFLOP/s, {:.0}% of peak ({} targets)",
        r.batch_inference_targets_per_second / 1e6,
        r.batch_inference_gflops,
        r.batch_inference_percent_of_peak,
        r.batch_targets
    );
    match (r.mdn_steps_to_target, r.mdn_seconds_to_target) {
        (Some(steps), Some(secs)) => outln!(
            "MDN to 1% of reach       {:>10.2} s      ({steps} steps; held-out mean FK miss, checked every {ACCURACY_CHECK_EVERY})",
            secs
        ),
        _ => {
            outln!("MDN to 1% of reach       not reached in the default run");
        }
    }
    if r.fma_peak_avx2_gflops > 0.0 && r.fma_kernel.starts_with("avx512") {
        outln!(
            "core AVX2 FMA peak       {:>10.1} GFLOP/s (8 lanes), training reaches {:.0}% of it, batched inference {:.0}%",
            r.fma_peak_avx2_gflops,
            100.0 * r.train_gflops / r.fma_peak_avx2_gflops,
            100.0 * r.batch_inference_gflops / r.fma_peak_avx2_gflops
        );
    }
    outln!(
        "workspace atlas, MDN     {:>10.1} ms     ({n} x {n} cells, 1 thread; {:.1} ms with the silent layer; {:.1} ms on {} threads; analytic {:.1} ms)",
        r.atlas_mdn_ms,
        r.atlas_mdn_silent_ms,
        r.atlas_mdn_parallel_ms,
        r.atlas_threads,
        r.atlas_analytic_ms,
        n = r.atlas_resolution
    );
    outln!("MDN inference            {:>10.3} µs", r.mdn_inference_us);
    outln!("MSE inference            {:>10.3} µs", r.mse_inference_us);
    let c = &r.chain;
    outln!(
        "flow sampling, rail3     {:>10.3} ms     (2000 samples of one target, {:.0} FLOP each: {:.0}% of peak)",
        c.flow_sample_ms,
        c.flow_sample_flops,
        c.flow_sample_percent_of_peak
    );
    outln!(
        "flow training step       {:>10.3} ms     (batch 512, {:.0} FLOP/sample: {:.0}% of peak)",
        c.flow_train_step_ms,
        c.flow_train_flops_per_sample,
        c.flow_train_percent_of_peak
    );
    outln!(
        "exact sampler, rail3     {:>10.2} ms     (500 posterior samples of one target at ESS 10000; median of 8 targets)",
        c.exact_sample_ms
    );
    outln!(
        "plant sub-step ({} ms)  {:>10.2} µs     (two-link, moving; rail3: {:.2} µs; so101: {:.2} µs)",
        elbow::plant::SUBSTEP * 1e3,
        c.plant_step_two_link_us,
        c.plant_step_rail3_us,
        c.plant_step_so101_us
    );
    if let Some(t) = experiments {
        outln!(
            "plant experiments, wall  degradation {:.1} s, randomization {:.1} s, tracking {:.2} s (default runs, {} threads)",
            t.degradation_s,
            t.randomization_s,
            t.tracking_s,
            t.threads
        );
    }
    Ok(())
}
