//! The window's size: as asked (`elbow --size WxH`), else [`PREFERRED`] shrunk to fit the
//! monitor it opens on, so that on a 1280x720 screen nothing runs off the edges.

use bevy::prelude::*;
use bevy::window::{Monitor, PrimaryMonitor, PrimaryWindow};

/// The size the lab is laid out for, logical pixels.
pub(crate) const PREFERRED: (u32, u32) = (1400, 900);

/// Share of the monitor's width and height the window may take (room for a title bar and a
/// task bar).
const SCREEN_SHARE: (f32, f32) = (0.96, 0.9);

/// Frames to wait for the monitor before keeping the window as it opened.
const PATIENCE: u32 = 120;

/// Registers the fitting system (a `--size` given on the command line is kept as given).
pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<WindowFit>().add_systems(Update, fit.run_if(|f: Res<WindowFit>| !f.done));
}

/// Whether the window still has to be fitted to its monitor.
#[derive(Resource, Debug, Clone, Copy, Default)]
pub(crate) struct WindowFit {
    /// Fitted, sized on the command line, or given up.
    done: bool,
    /// Frames waited for the monitor.
    waited: u32,
}

impl WindowFit {
    /// The fit for `--size` (`None`: fit the monitor).
    pub(crate) fn new(asked: Option<(u32, u32)>) -> Self {
        Self { done: asked.is_some(), waited: 0 }
    }
}

/// The window size for a monitor of `monitor` logical pixels: [`PREFERRED`], each side shrunk
/// to [`SCREEN_SHARE`] of the monitor's where that is smaller.
pub(crate) fn fitted(monitor: (f32, f32)) -> (f32, f32) {
    let side = |preferred: u32, screen: f32, share: f32| {
        let room = screen * share;
        if room.is_finite() && room >= 320.0 { (preferred as f32).min(room).floor() } else { preferred as f32 }
    };
    (side(PREFERRED.0, monitor.0, SCREEN_SHARE.0), side(PREFERRED.1, monitor.1, SCREEN_SHARE.1))
}

/// Once the primary monitor is known, shrinks the window to fit it and centres it there.
fn fit(
    mut fit: ResMut<WindowFit>,
    monitors: Query<&Monitor, With<PrimaryMonitor>>,
    mut window: Single<&mut Window, With<PrimaryWindow>>,
) {
    let Ok(monitor) = monitors.single() else {
        fit.waited += 1;
        fit.done = fit.waited > PATIENCE;
        return;
    };
    let scale = if monitor.scale_factor.is_finite() && monitor.scale_factor > 0.0 { monitor.scale_factor } else { 1.0 };
    let logical = (monitor.physical_width as f32 / scale as f32, monitor.physical_height as f32 / scale as f32);
    let (w, h) = fitted(logical);
    if (w, h) != (window.resolution.width(), window.resolution.height()) {
        window.resolution.set(w, h);
        window.position = WindowPosition::Centered(MonitorSelection::Primary);
    }
    fit.done = true;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_fits_small_screens_and_keeps_its_size_on_big_ones() {
        assert_eq!(fitted((1920.0, 1080.0)), (1400.0, 900.0));
        let (w, h) = fitted((1280.0, 720.0));
        assert!(w <= 1280.0 * 0.96 && h <= 720.0 * 0.9 && w >= 1200.0 && h >= 640.0, "{w}x{h}");
        assert_eq!(fitted((f32::NAN, 0.0)), (1400.0, 900.0), "an unknown monitor keeps the preferred size");
    }
}
