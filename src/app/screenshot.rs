//! Unattended screenshots: with `ELBOW_SCREENSHOT=path.png` in the environment the app saves
//! the primary window to that path once `ELBOW_SCREENSHOT_AFTER` seconds (default 25) have
//! passed, then exits. Without the variable this plugin does nothing.

use bevy::prelude::*;
use bevy::render::view::screenshot::{Screenshot, save_to_disk};
use std::path::PathBuf;

/// Registers the screenshot hook when `ELBOW_SCREENSHOT` is set.
pub(crate) fn plugin(app: &mut App) {
    let Some(path) = std::env::var_os("ELBOW_SCREENSHOT").map(PathBuf::from) else { return };
    let after = std::env::var("ELBOW_SCREENSHOT_AFTER").ok().and_then(|s| s.parse::<f64>().ok());
    let after = after.filter(|a| a.is_finite() && *a >= 0.0).unwrap_or(25.0);
    // An old file would look like the new one being done.
    let _ = std::fs::remove_file(&path);
    app.insert_resource(Plan { path, after, taken_at: None }).add_systems(Update, shoot);
}

/// Seconds to wait for the file before giving up.
const SAVE_TIMEOUT: f64 = 20.0;

/// Where and when to take the screenshot.
#[derive(Resource)]
struct Plan {
    path: PathBuf,
    after: f64,
    taken_at: Option<f64>,
}

/// Requests the screenshot when due, and exits once it is on disk.
fn shoot(mut commands: Commands, time: Res<Time<Real>>, mut plan: ResMut<Plan>, mut exit: MessageWriter<AppExit>) {
    let now = time.elapsed_secs_f64();
    match plan.taken_at {
        None if now >= plan.after => {
            commands.spawn(Screenshot::primary_window()).observe(save_to_disk(plan.path.clone()));
            plan.taken_at = Some(now);
            info!("screenshot requested: {}", plan.path.display());
        }
        Some(at) if plan.path.exists() && now > at + 1.0 => {
            info!("screenshot saved: {}", plan.path.display());
            exit.write(AppExit::Success);
        }
        Some(at) if now > at + SAVE_TIMEOUT => {
            error!("screenshot not saved within {SAVE_TIMEOUT} s: {}", plan.path.display());
            exit.write(AppExit::error());
        }
        _ => {}
    }
}
