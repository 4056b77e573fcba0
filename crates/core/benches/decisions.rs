//! Scheduler decisions per second for the Rust reference programs.
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use mpsched_core::packet::PacketMeta;
use mpsched_core::rng::SeededRandom;
use mpsched_core::sched::{benchmark_configs, Scheduler};
use std::hint::black_box;

fn bench(c: &mut Criterion) {
    let meta = PacketMeta::udp(0x0a00_0001, 0x0a00_0003, 5001, 5201, 1512);
    let configs = benchmark_configs();
    let mut g = c.benchmark_group("decisions");
    const BATCH: u64 = 1024;
    g.throughput(Throughput::Elements(BATCH));
    for (name, cfg, n) in configs {
        g.bench_function(name, |b| {
            b.iter_batched_ref(
                || Scheduler::new(&cfg, n, Box::new(SeededRandom::new(1))).unwrap(),
                |s| {
                    for _ in 0..BATCH {
                        black_box(s.select(black_box(&meta)));
                    }
                },
                BatchSize::SmallInput,
            )
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
