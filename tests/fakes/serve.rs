//! The contract fakes as one process, for the browser tests (`scripts/e2e.sh`): starts
//! them on loopback, prints one JSON line with their addresses and credentials, and serves
//! until it is killed. Runs programs in the local sandbox, so it needs what the local
//! provider needs (root for cgroups).

#[path = "mod.rs"]
mod fakes;

/// The executor fake's token (any value works: it is a test credential).
const EXECUTOR_TOKEN: &str = "e2e-executor-token";

#[tokio::main]
async fn main() {
    let executor = fakes::executor_manager::start(Some(EXECUTOR_TOKEN)).await;
    let e2b = fakes::e2b::start().await;
    let agentrun = fakes::agentrun::start().await;
    let ucloud = fakes::ucloud::start().await;
    let tenki = fakes::tenki::start().await;
    let kubernetes = fakes::kubernetes::start(fakes::kubernetes::Options::default()).await;
    println!(
        "{}",
        serde_json::json!({
            "executor_manager": executor.url(),
            "executor_token": EXECUTOR_TOKEN,
            "e2b": e2b.url(),
            "e2b_api_key": fakes::e2b::API_KEY,
            "agentrun": agentrun.url(),
            "agentrun_access_key_id": fakes::agentrun::ACCESS_KEY_ID,
            "agentrun_secret": fakes::agentrun::SECRET,
            "agentrun_account_id": fakes::agentrun::ACCOUNT_ID,
            "ucloud": ucloud.url(),
            "ucloud_api_key": fakes::ucloud::API_KEY,
            "tenki": tenki.url(),
            "tenki_api_key": fakes::tenki::API_KEY,
            "kubernetes": kubernetes.url(),
            "kubernetes_token": fakes::kubernetes::TOKEN,
            "kubernetes_runtime_port": kubernetes.runtime_port(),
        })
    );
    std::future::pending::<()>().await;
}
