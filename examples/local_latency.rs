//! Latency of the `local` provider for a trivial `main()`, against the floor measured in the
//! same run: bare `python3.11 -c pass` and `node -e 0` with no sandbox.
//! Run: `cargo run --release --features ssr --example local_latency [runs]`

use std::{process::Command, time::Instant};

use sandbox_console::{
    model::execution::{ExecRequest, Language},
    sandbox::providers::local,
};

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn bare(program: &str, args: &[&str], runs: usize) -> f64 {
    median(
        (0..runs)
            .map(|_| {
                let started = Instant::now();
                let status = Command::new(program)
                    .args(args)
                    .status()
                    .expect("the interpreter runs");
                assert!(status.success());
                started.elapsed().as_secs_f64() * 1000.0
            })
            .collect(),
    )
}

#[tokio::main]
async fn main() {
    let runs: usize = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(50);
    let provider = local::build(&serde_json::Map::new()).expect("the local provider builds");
    println!("runs per measurement: {runs}");
    for (language, code, floor_program, floor_args) in [
        (
            Language::Python,
            "def main():\n    return 1\n",
            "/usr/bin/python3.11",
            &["-c", "pass"][..],
        ),
        (
            Language::Javascript,
            "function main() { return 1; }",
            "/usr/bin/node",
            &["-e", "0"][..],
        ),
    ] {
        let floor = bare(floor_program, floor_args, runs);
        let mut samples = Vec::with_capacity(runs);
        for _ in 0..runs {
            let request = ExecRequest {
                language,
                code: code.into(),
                arguments: Default::default(),
                timeout_secs: None,
            };
            let instance = provider.create_instance(language).await.unwrap();
            let started = Instant::now();
            let result = provider
                .execute(&instance, &request)
                .await
                .expect("the run works");
            samples.push(started.elapsed().as_secs_f64() * 1000.0);
            assert_eq!(
                result.result.value,
                serde_json::json!(1),
                "{}",
                result.stderr
            );
            provider.destroy_instance(instance).await.unwrap();
        }
        let sandboxed = median(samples);
        println!(
            "{language:<10} local provider median {sandboxed:7.1} ms | bare interpreter median {floor:7.1} ms | ratio {:.2}",
            sandboxed / floor
        );
    }
}
