//! The window's size: as asked (`elbow --size WxH`), else [`PREFERRED`] shrunk to fit the
//! monitor it opens on, so that on a 1280x720 screen nothing runs off the edges. And the text in
//! it: egui's small text raised so that it reads at 1280x720 ([`SMALL_TEXT`]),
//! and the glyphs egui adds to its font atlas reach the screen in the frame that draws them
//! ([`glyphs_on_time`]).

use bevy::asset::AssetEventSystems;
use bevy::prelude::*;
use bevy::window::{Monitor, PrimaryMonitor, PrimaryWindow};
use bevy_egui::{EguiContexts, EguiPostUpdateSet, EguiPrimaryContextPass, egui};

/// The size the lab is laid out for, logical pixels.
pub(crate) const PREFERRED: (u32, u32) = (1400, 900);

/// Share of the monitor's width and height the window may take (room for a title bar and a
/// task bar).
const SCREEN_SHARE: (f32, f32) = (0.96, 0.9);

/// Frames to wait for the monitor before keeping the window as it opened.
const PATIENCE: u32 = 120;

/// Registers the fitting system (a `--size` given on the command line is kept as given), the
/// text size and the font atlas's timing.
pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<WindowFit>().add_systems(Update, fit.run_if(|f: Res<WindowFit>| !f.done));
    app.add_systems(EguiPrimaryContextPass, text_sizes);
    glyphs_on_time(app);
}

/// The size of egui's `Small` text style, logical pixels, and the smallest text the app shows.
/// egui's default, 9 px, is about 8 px of ink on screen: unreadable at 1280x720 for the hint line,
/// the captions, the readouts and the plots' legends, all `Small`. egui's other styles are 12 px
/// or more already and keep their sizes, so the panel's width grows only as much as its small
/// text does.
pub(crate) const SMALL_TEXT: f32 = 12.0;

/// Raises `style`'s `Small` text to [`SMALL_TEXT`] (and any style under it).
pub(crate) fn set_text_sizes(style: &mut egui::Style) {
    for font in style.text_styles.values_mut() {
        font.size = font.size.max(SMALL_TEXT);
    }
}

/// Puts [`SMALL_TEXT`] in every theme's style of the primary context, once (checked each frame:
/// a cheap comparison), so that the panel lays out with it from the next frame on.
fn text_sizes(mut contexts: EguiContexts) -> Result {
    let ctx = contexts.ctx_mut()?;
    let small = ctx.global_style().text_styles.get(&egui::TextStyle::Small).map(|f| f.size);
    if small != Some(SMALL_TEXT) {
        ctx.all_styles_mut(set_text_sizes);
    }
    Ok(())
}

/// Makes the glyphs egui rasterizes in a frame reach the screen in that frame.
///
/// egui lays text out with glyphs from one font atlas texture; a glyph seen for the first time
/// (a new digit, or a digit at one of the four sub-pixel offsets egui 0.36 rasterizes separately)
/// is added to the atlas, and bevy_egui writes the change into the atlas's `Image` asset in
/// [`EguiPostUpdateSet::PostProcessOutput`]. The renderer copies an image to the GPU only when
/// it sees that image's [`AssetEvent`], which `Assets<Image>` sends from [`AssetEventSystems`],
/// and nothing orders the two: the event system, ready from the start of `PostUpdate`, runs
/// first, so the atlas's change was announced a frame late and every new glyph was drawn from
/// blank texels in its first frame ("misses by 70 . mm", "frame 17 .5 ms"; a whole-atlas update,
/// when the atlas grows, dropped every text of that frame). Ordering bevy_egui's texture update
/// before the event systems announces the change in the same frame.
pub(crate) fn glyphs_on_time(app: &mut App) {
    app.configure_sets(PostUpdate, EguiPostUpdateSet::PostProcessOutput.before(AssetEventSystems));
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

    #[test]
    fn every_text_style_is_at_least_the_floor() {
        let mut style = egui::Style::default();
        set_text_sizes(&mut style);
        for (text_style, font) in &style.text_styles {
            assert!(font.size >= SMALL_TEXT, "{text_style:?} is {} px, under {SMALL_TEXT}", font.size);
        }
        let size = |s: egui::TextStyle| style.text_styles[&s].size;
        assert_eq!(size(egui::TextStyle::Small), SMALL_TEXT);
        assert!(size(egui::TextStyle::Small) <= size(egui::TextStyle::Body), "small text stays the smaller");
    }

    /// The pairs of systems of `PostUpdate` that touch `Assets<Image>` in no set order, in an app
    /// with egui's plugin, after `configure` (bevy lets every system touch `Assets<Image>` in any
    /// order; that permission is withdrawn here so that the check sees the pairs).
    fn unordered_image_systems(configure: impl FnOnce(&mut App)) -> Vec<(String, String)> {
        let mut app = App::new();
        app.add_plugins((MinimalPlugins, AssetPlugin::default()))
            .init_asset::<Image>()
            .init_asset::<bevy::shader::Shader>()
            .add_plugins(bevy_egui::EguiPlugin::default());
        configure(&mut app);
        let world = app.world_mut();
        let images = world.component_id::<Assets<Image>>().expect("images are an asset");
        world.resource_mut::<Schedules>().ignored_scheduling_ambiguities.remove(&images);
        world.schedule_scope(PostUpdate, |world, schedule| {
            schedule.initialize(world).expect("PostUpdate builds");
            let names: std::collections::HashMap<_, _> = schedule
                .systems()
                .expect("initialized")
                .map(|(key, system)| (key, system.name().to_string()))
                .collect();
            let name = |key| names.get(key).cloned().unwrap_or_default();
            schedule.graph().conflicting_systems().iter().map(|(a, b, _)| (name(a), name(b))).collect()
        })
    }

    #[test]
    fn the_font_atlas_reaches_the_renderer_in_the_frame_it_changes() {
        let late = |pairs: &[(String, String)]| {
            pairs.iter().any(|(a, b)| {
                let both = format!("{a} {b}");
                both.contains("update_egui_textures_system") && both.contains("Image>::asset_events")
            })
        };
        assert!(late(&unordered_image_systems(|_| ())), "without the order the check sees the race");
        let pairs = unordered_image_systems(glyphs_on_time);
        assert!(!late(&pairs), "the atlas's update runs before its event is sent: {pairs:?}");
    }
}
