//! Simulator events per second on the high-rate scenario (two 10 Gbps paths, 1500-byte packets).
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use mpsched_sim::experiment::high_rate_scenario;
use mpsched_sim::{SimOptions, Simulation};

fn bench(c: &mut Criterion) {
    // 0.2 simulated seconds per iteration keeps criterion's sampling short.
    let sc = high_rate_scenario(10_000_000_000, 1)
        .unwrap()
        .scaled_to(200_000_000_000);
    let events = Simulation::new(&sc, &SimOptions::with_seed(1))
        .unwrap()
        .run()
        .unwrap()
        .events;
    let mut g = c.benchmark_group("engine");
    g.sample_size(10);
    g.throughput(Throughput::Elements(events));
    g.bench_function("high_rate_10g_0.2s", |b| {
        b.iter(|| {
            Simulation::new(&sc, &SimOptions::with_seed(1))
                .unwrap()
                .run()
                .unwrap()
                .events
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
