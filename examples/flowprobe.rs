use elbow::chain::{ArmKind, Method, nets::{ChainNet, NetConfig, NetKind}};
use elbow::experiments::chain::{ChainConfig, chain};
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let arm = match a[1].as_str() { "rail3" => ArmKind::Rail3, "3r" => ArmKind::ThreeR, _ => ArmKind::So101 }.arm();
    let seed: u64 = a[2].parse().unwrap();
    let eval = a.get(3).is_some_and(|s| s == "eval");
    let mut cfg = NetConfig { seed, ..NetConfig::default() };
    if let Ok(c) = std::env::var("CLAMP") { cfg.flow.clamp = c.parse().unwrap(); }
    if let Ok(c) = std::env::var("LR") { cfg.lr = c.parse().unwrap(); }
    let t = std::time::Instant::now();
    if eval {
        let mut c = ChainConfig::new(arm);
        c.methods = vec![Method::Flow];
        c.net = cfg;
        c.seed = seed;
        match chain(&c) {
            Ok(r) => { let row = r.row(Method::Flow).unwrap(); println!("mmd {:.4} floor {:.4} resim {:.5} success {:.3} {:.1}s", row.posterior_mmd, r.mmd_floor.mean, row.resim_error, row.success_rate, t.elapsed().as_secs_f32()); }
            Err(e) => println!("ERR {e}"),
        }
        return;
    }
    let mut win = Vec::new();
    let mut maxall = f32::MIN;
    let r = ChainNet::train(&arm, NetKind::Flow, &cfg, |step, loss| {
        win.push(loss);
        if step % 1000 == 0 {
            let mean = win.iter().sum::<f32>() / win.len() as f32;
            let max = win.iter().cloned().fold(f32::MIN, f32::max);
            maxall = maxall.max(max);
            print!("{step}:{mean:.2}/{max:.1} ");
            win.clear();
        }
        true
    });
    println!("\n{:?} {:.1}s", r.err(), t.elapsed().as_secs_f32());
}
