//! The cameras and the pointer: the world camera renders into the part of the window right of
//! the egui panel (its viewport follows the panel's width, so the arm stays centred there), a
//! second camera renders egui over the whole window, and left-button drags inside the world
//! viewport become world-space [`PointerDrag`] messages. Drags that start over the panel, or
//! wander onto it, do not move the target.
//!
//! The world camera frames the open arm's reach with a margin ([`frame`]), again whenever the
//! arm changes, or the box an open replay asks for ([`Framing`]'s focus); the wheel over the
//! view and the `+`, `-` and `0` keys zoom it ([`zoom`]). [`ViewScale`] tells the drawing how many metres one logical pixel of the
//! view is this frame, so every mark (crosses, rings, dots, arrows) is sized in pixels and
//! reads the same on the SO-101's 41 cm and on rail3's 3 m.

use super::AppSet;
use super::state::arm::{Lab, Nominal};
use super::state::view::{Framing, Hover, PanelWidth, PointerDrag};
use bevy::camera::visibility::RenderLayers;
use bevy::camera::{CameraOutputMode, CameraProjection, ScalingMode, Viewport};
use bevy::input::mouse::{AccumulatedMouseScroll, MouseScrollUnit};
use bevy::prelude::*;
use bevy::render::render_resource::BlendState;
use bevy::window::PrimaryWindow;
use bevy_egui::input::EguiWantsInput;
use bevy_egui::{EguiGlobalSettings, PrimaryEguiContext};
use elbow::Point2;

/// Registers the cameras and the viewport and pointer systems.
pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<ViewScale>()
        .add_systems(Startup, spawn_cameras)
        // The wheel zooms where the pointer is this frame: zoom reads the hover `pointer` just set
        // (before it, a wheel turned just after the pointer left the view for the panel zoomed).
        .add_systems(Update, (fit_span, fit_viewport, measure, pointer, zoom).chain().in_set(AppSet::Input));
}

/// Background of the world viewport.
const BACKGROUND: Color = Color::srgb(0.07, 0.075, 0.09);

/// Logical pixels right of the panel edge that still belong to the panel's resize handle.
const HANDLE_MARGIN: f32 = 6.0;

/// The world camera.
#[derive(Component)]
pub(crate) struct WorldCamera;

/// How large one logical pixel of the world view is this frame, metres: marks are sized in
/// pixels through it ([`ViewScale::px`]), so they keep their size on screen whatever the arm's
/// scale, the window's size or the panel's width.
#[derive(Resource, Debug, Clone, Copy, PartialEq)]
pub(crate) struct ViewScale {
    /// Metres per logical pixel.
    pub(crate) metres_per_px: f32,
}

impl Default for ViewScale {
    /// The default two-link arm's scale in a 1280 x 720 window, until the first frame measures.
    fn default() -> Self {
        Self { metres_per_px: 0.007 }
    }
}

impl ViewScale {
    /// `n` logical pixels in metres.
    pub(crate) fn px(&self, n: f32) -> f32 {
        n * self.metres_per_px
    }
}

/// Metres per logical pixel of `projection` on a viewport of `viewport` logical pixels, when it
/// is orthographic and the viewport has room.
pub(crate) fn metres_per_px(projection: &Projection, viewport: Vec2) -> Option<f32> {
    let Projection::Orthographic(o) = projection else { return None };
    if !(viewport.x >= 1.0 && viewport.y >= 1.0) {
        return None;
    }
    let mut o = o.clone();
    o.update(viewport.x, viewport.y);
    let m = o.area.width() / viewport.x;
    (m.is_finite() && m > 0.0).then_some(m)
}

/// Updates [`ViewScale`] from the world camera's projection and viewport.
fn measure(camera: Single<(&Camera, &Projection), With<WorldCamera>>, mut scale: ResMut<ViewScale>) {
    let (camera, projection) = *camera;
    if let Some(m) = camera.logical_viewport_size().and_then(|size| metres_per_px(projection, size)) {
        scale.set_if_neq(ViewScale { metres_per_px: m });
    }
}

/// Spawns the world camera (metres, the whole workspace in view) and the egui camera on top.
fn spawn_cameras(mut commands: Commands, mut egui: ResMut<EguiGlobalSettings>, lab: Res<Lab>, nominal: Res<Nominal>) {
    // The egui context goes on the second camera, which covers the whole window.
    egui.auto_create_primary_context = false;
    let [min_width, min_height] = frame(&lab, &nominal);
    commands.spawn((
        WorldCamera,
        Camera2d,
        Camera { clear_color: ClearColorConfig::Custom(BACKGROUND), ..default() },
        Projection::Orthographic(OrthographicProjection {
            scaling_mode: ScalingMode::AutoMin { min_width, min_height },
            ..OrthographicProjection::default_2d()
        }),
    ));
    commands.spawn((
        PrimaryEguiContext,
        Camera2d,
        // Draws nothing of the world, only egui.
        RenderLayers::none(),
        Camera {
            order: 1,
            output_mode: CameraOutputMode::Write {
                blend_state: Some(BlendState::ALPHA_BLENDING),
                clear_color: ClearColorConfig::None,
            },
            clear_color: ClearColorConfig::Custom(Color::NONE),
            ..default()
        },
    ));
}

/// Margin around a chain's reach, as a fraction of it on each side.
const CHAIN_MARGIN: f64 = 0.08;
/// Margin around the two-link arm's reach, as a fraction of it on each side (its annulus, axes
/// and labels).
const TWO_LINK_MARGIN: f64 = 0.15;

/// The world box the camera shows at least for the open lab, centred on the base, metres
/// (width, height): the two-link arm's reach every way, or the chain's reach across and its
/// reach plus its rail's travel (along `y`) up and down, each with a margin. The viewport's
/// longer side shows more.
fn frame(lab: &Lab, nominal: &Nominal) -> [f32; 2] {
    match lab.chain() {
        Some(arm) => {
            let across = arm.chain.reach();
            let along = arm.extent();
            [across, along].map(|half| (2.0 * (1.0 + CHAIN_MARGIN) * half) as f32)
        }
        None => [(2.0 * (1.0 + TWO_LINK_MARGIN) * nominal.0.reach()) as f32; 2],
    }
}

/// Pixels of a wheel that scrolls smoothly (a touchpad) per zoom step.
const PIXELS_PER_STEP: f32 = 50.0;

/// Zooms the view: a notch of the wheel over the view, or `+` / `-` (`=` and the keypad's too),
/// a step; `0` frames again as at first. The zoom starts again as framed when the lab changes.
/// Keys typed into a panel field, and the wheel over the panel, stay with egui.
fn zoom(
    lab: Res<Lab>,
    nominal: Res<Nominal>,
    keys: Option<Res<ButtonInput<KeyCode>>>,
    wheel: Option<Res<AccumulatedMouseScroll>>,
    hover: Res<Hover>,
    egui: Option<Res<EguiWantsInput>>,
    mut framing: ResMut<Framing>,
) {
    if (lab.is_changed() || nominal.is_changed()) && framing.zoom != 1.0 {
        framing.zoom = 1.0;
    }
    let typing = egui.as_ref().is_some_and(|e| e.wants_any_keyboard_input());
    let mut steps = 0.0;
    if let Some(keys) = keys.filter(|_| !typing) {
        if keys.any_just_pressed([KeyCode::Equal, KeyCode::NumpadAdd]) {
            steps += 1.0;
        }
        if keys.any_just_pressed([KeyCode::Minus, KeyCode::NumpadSubtract]) {
            steps -= 1.0;
        }
        if keys.any_just_pressed([KeyCode::Digit0, KeyCode::Numpad0]) && framing.zoom != 1.0 {
            framing.zoom = 1.0;
        }
    }
    // The wheel zooms only over the view (`Hover` is set there alone).
    if let Some(wheel) = wheel.filter(|_| hover.0.is_some()) {
        steps += match wheel.unit {
            MouseScrollUnit::Line => wheel.delta.y,
            MouseScrollUnit::Pixel => wheel.delta.y / PIXELS_PER_STEP,
        };
    }
    if steps != 0.0 {
        framing.zoom_by(steps);
    }
}

/// The world box the camera shows at least, and where its centre is: the open replay's focus
/// when there is one, else the lab's arm around its base ([`frame`]), `zoom` times closer.
pub(crate) fn shown(lab: &Lab, nominal: &Nominal, framing: &Framing) -> (Vec2, [f32; 2]) {
    let (center, size) = match framing.focus {
        Some(f) => (Vec2::new(f.center.x as f32, f.center.y as f32), [f.size[0] as f32, f.size[1] as f32]),
        None => (Vec2::ZERO, frame(lab, nominal)),
    };
    let zoom = if framing.zoom.is_finite() && framing.zoom > 0.0 { framing.zoom } else { 1.0 };
    (center, size.map(|s| s / zoom))
}

/// Fits the world camera to what it shows ([`shown`]), when that changed.
fn fit_span(
    lab: Res<Lab>,
    nominal: Res<Nominal>,
    framing: Res<Framing>,
    camera: Single<(&mut Projection, &mut Transform), With<WorldCamera>>,
) {
    let (mut projection, mut transform) = camera.into_inner();
    let (center, [min_width, min_height]) = shown(&lab, &nominal, &framing);
    if let Projection::Orthographic(o) = &mut *projection {
        let mode = ScalingMode::AutoMin { min_width, min_height };
        if !matches!(o.scaling_mode, ScalingMode::AutoMin { min_width: w, min_height: h } if w == min_width && h == min_height)
        {
            o.scaling_mode = mode;
        }
    }
    if transform.translation.truncate() != center {
        transform.translation = center.extend(transform.translation.z);
    }
}

/// Shrinks the world camera's viewport to the window right of the panel.
fn fit_viewport(
    window: Single<&Window, With<PrimaryWindow>>,
    panel: Res<PanelWidth>,
    mut camera: Single<&mut Camera, With<WorldCamera>>,
) {
    let (w, h) = (window.physical_width(), window.physical_height());
    let panel_px = (panel.0.max(0.0) * window.scale_factor()).round() as u32;
    let viewport = (w > panel_px + 1 && h > 1).then(|| Viewport {
        physical_position: UVec2::new(panel_px, 0),
        physical_size: UVec2::new(w - panel_px, h),
        ..default()
    });
    let same = match (&camera.viewport, &viewport) {
        (Some(a), Some(b)) => a.physical_position == b.physical_position && a.physical_size == b.physical_size,
        (None, None) => true,
        _ => false,
    };
    if !same {
        camera.viewport = viewport;
    }
}

/// One frame of the left button: whether the target moves to the pointer, and whether a drag
/// goes on into the next frame. A press inside the view starts a drag; a press and release
/// within one frame (most clicks at a low frame rate) is a click, and moves the target too.
pub(crate) fn press(dragging: bool, just_pressed: bool, pressed: bool, in_view: bool) -> (bool, bool) {
    let held = if just_pressed { in_view } else { dragging };
    (in_view && (just_pressed || (held && pressed)), held && pressed)
}

/// Turns left-button drags inside the world viewport into [`PointerDrag`] messages, and records
/// where the pointer hovers ([`Hover`]).
fn pointer(
    buttons: Res<ButtonInput<MouseButton>>,
    window: Single<&Window, With<PrimaryWindow>>,
    camera: Single<(&Camera, &GlobalTransform), With<WorldCamera>>,
    egui: Res<EguiWantsInput>,
    mut dragging: Local<bool>,
    mut drags: MessageWriter<PointerDrag>,
    mut hover: ResMut<Hover>,
) {
    let (camera, transform) = *camera;
    // The viewport already excludes the panel; the margin keeps the panel's resize handle out.
    // (Egui's "pointer over area" is not used: its background-layer panels can report it
    // everywhere.) Drags of egui widgets and open popups keep the pointer for egui.
    let egui_busy = egui.is_using_pointer() || egui.is_popup_open();
    let in_view = window.cursor_position().filter(|&c| {
        !egui_busy && camera.logical_viewport_rect().is_some_and(|r| r.contains(c) && c.x > r.min.x + HANDLE_MARGIN)
    });
    let world = in_view.and_then(|c| camera.viewport_to_world_2d(transform, c).ok());
    hover.set_if_neq(Hover(world.map(|w| Point2::new(f64::from(w.x), f64::from(w.y)))));
    let left = MouseButton::Left;
    let moves;
    (moves, *dragging) = press(*dragging, buttons.just_pressed(left), buttons.pressed(left), in_view.is_some());
    if moves
        && let Some(cursor) = in_view
        && let Ok(world) = camera.viewport_to_world_2d(transform, cursor)
    {
        drags.write(PointerDrag(Point2::new(world.x as f64, world.y as f64)));
    }
}

#[cfg(test)]
mod tests {
    use super::{Framing, Lab, Nominal, ViewScale, WorldCamera, fit_span, frame, measure, metres_per_px, press};
    use crate::app::state::view::{Focus, MAX_ZOOM, MIN_ZOOM};
    use bevy::camera::{ComputedCameraValues, RenderTargetInfo, ScalingMode, Viewport};
    use bevy::prelude::*;
    use elbow::Point2;
    use elbow::TwoLinkArm;
    use elbow::arm::{Arm, ArmKind};
    use rand::{RngExt, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// An orthographic projection showing at least `w` x `h` metres.
    fn projection(w: f32, h: f32) -> Projection {
        Projection::Orthographic(OrthographicProjection {
            scaling_mode: ScalingMode::AutoMin { min_width: w, min_height: h },
            ..OrthographicProjection::default_2d()
        })
    }

    #[test]
    fn the_pixel_scale_follows_the_projection_and_the_viewport() {
        let close = |a: Option<f32>, b: f32| a.is_some_and(|a| (a - b).abs() < 1e-6 * b);
        // 2 m across a 400 px high viewport (the shorter side): 5 mm a pixel.
        assert!(close(metres_per_px(&projection(2.0, 2.0), Vec2::new(800.0, 400.0)), 0.005));
        assert!(close(metres_per_px(&projection(4.0, 4.0), Vec2::new(800.0, 400.0)), 0.01), "twice the span");
        assert!(close(metres_per_px(&projection(2.0, 2.0), Vec2::new(800.0, 800.0)), 0.0025), "a taller view");
        // A tall frame in a wide view: the height decides.
        assert!(close(metres_per_px(&projection(1.0, 6.0), Vec2::new(800.0, 600.0)), 0.01));
        assert_eq!(metres_per_px(&projection(2.0, 2.0), Vec2::ZERO), None, "no viewport yet");
        assert_eq!(metres_per_px(&Projection::Perspective(default()), Vec2::splat(100.0)), None);

        // The system reads the camera's logical viewport (a 2x screen: 1600 physical px are 800).
        let mut app = App::new();
        app.init_resource::<ViewScale>().add_systems(Update, measure);
        let mut camera =
            Camera { viewport: Some(Viewport { physical_size: UVec2::new(1600, 800), ..default() }), ..default() };
        camera.computed = ComputedCameraValues {
            target_info: Some(RenderTargetInfo { physical_size: UVec2::new(2000, 800), scale_factor: 2.0 }),
            ..default()
        };
        let id = app.world_mut().spawn((WorldCamera, camera, projection(2.0, 2.0))).id();
        app.update();
        assert!((app.world().resource::<ViewScale>().metres_per_px - 0.005).abs() < 1e-8);
        *app.world_mut().get_mut::<Projection>(id).unwrap() = projection(0.5, 0.5);
        app.update();
        let scale = *app.world().resource::<ViewScale>();
        assert!((scale.metres_per_px - 0.00125).abs() < 1e-8, "{scale:?}");
        assert!((scale.px(8.0) - 0.01).abs() < 1e-8);
    }

    /// The lab an arm opens in: the two-link lab for `2r`, else the chain lab.
    fn lab(kind: ArmKind) -> Lab {
        Lab(kind.arm())
    }

    /// The farthest a tip of `arm` gets along `x` and along `y` either way, over poses drawn
    /// within its ranges, each coordinate now and then at a bound or straight.
    fn farthest(arm: &Arm) -> [f64; 2] {
        let chain = &arm.chain;
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let mut far = [0.0f64; 2];
        let mut x = vec![0.0; chain.coords()];
        for _ in 0..100_000 {
            for (i, v) in x.iter_mut().enumerate() {
                let (lo, hi) = chain.range(i);
                *v = match rng.random_range(0..4) {
                    0 => lo,
                    1 => hi,
                    2 => 0.0f64.clamp(lo, hi),
                    _ => rng.random_range(lo..=hi),
                };
            }
            let tip = chain.tip(&x);
            far = [far[0].max(tip.x.abs()), far[1].max(tip.y.abs())];
        }
        far
    }

    #[test]
    fn the_camera_frames_every_named_arm_with_a_margin_and_not_much_more() {
        for kind in ArmKind::ALL {
            let arm = kind.arm();
            let [w, h] = frame(&lab(kind), &Nominal(TwoLinkArm::default()));
            let far = farthest(&arm);
            for (axis, (shown, far)) in [(w, far[0]), (h, far[1])].into_iter().enumerate() {
                let half = f64::from(shown) / 2.0;
                // In view with room for the marks around the tip, and the arm not lost in it.
                assert!(
                    far <= half / 1.05,
                    "{}: axis {axis}: the tip reaches {far:.3} m, {half:.3} m shown",
                    kind.key()
                );
                assert!(
                    far >= half / 1.2,
                    "{}: axis {axis}: {half:.3} m shown for a tip that reaches {far:.3} m",
                    kind.key()
                );
            }
        }
    }

    #[test]
    fn the_camera_refits_when_the_arm_changes_live() {
        let mut app = App::new();
        app.insert_resource(lab(ArmKind::So101)).insert_resource(Nominal(TwoLinkArm::default()));
        app.init_resource::<Framing>().add_systems(Update, fit_span);
        let id = app.world_mut().spawn((WorldCamera, projection(1.0, 1.0), Transform::default())).id();
        let shown = |app: &App| match app.world().get::<Projection>(id) {
            Some(Projection::Orthographic(OrthographicProjection {
                scaling_mode: ScalingMode::AutoMin { min_width, min_height },
                ..
            })) => [*min_width, *min_height],
            _ => panic!("an orthographic camera"),
        };
        for kind in [ArmKind::So101, ArmKind::Rail3, ArmKind::ThreeR, ArmKind::TwoR] {
            *app.world_mut().resource_mut::<Lab>() = lab(kind);
            app.update();
            assert_eq!(shown(&app), frame(&lab(kind), &Nominal(TwoLinkArm::default())), "{}", kind.key());
        }
        let long = TwoLinkArm::new(2.0, 1.5).unwrap();
        app.world_mut().resource_mut::<Nominal>().0 = long;
        app.update();
        assert!(shown(&app).iter().all(|s| (s - 2.3 * 3.5).abs() < 1e-5), "a longer two-link arm: {:?}", shown(&app));
        // A replay's focus: the camera centres on it and shows its box; zoomed twice as close,
        // half of it; the focus gone, the arm again round its base.
        let focus = Focus { center: Point2::new(1.2, -0.4), size: [0.2, 0.1] };
        app.world_mut().resource_mut::<Framing>().focus = Some(focus);
        app.update();
        let at = |app: &App| app.world().get::<Transform>(id).unwrap().translation.truncate();
        assert_eq!((at(&app), shown(&app)), (Vec2::new(1.2, -0.4), [0.2, 0.1]));
        app.world_mut().resource_mut::<Framing>().zoom = 2.0;
        app.update();
        assert_eq!(shown(&app), [0.1, 0.05]);
        *app.world_mut().resource_mut::<Framing>() = Framing::default();
        app.update();
        assert_eq!((at(&app), shown(&app)), (Vec2::ZERO, [2.3 * 3.5; 2]));
    }

    #[test]
    fn the_zoom_steps_by_a_quarter_and_stays_within_its_bounds() {
        let mut f = Framing::default();
        f.zoom_by(1.0);
        assert!((f.zoom - 1.25).abs() < 1e-6);
        f.zoom_by(-2.0);
        assert!((f.zoom - 0.8).abs() < 1e-6);
        f.zoom_by(1000.0);
        assert_eq!(f.zoom, MAX_ZOOM);
        f.zoom_by(-1e6);
        assert_eq!(f.zoom, MIN_ZOOM);
        f.zoom_by(f32::NAN);
        assert_eq!(f.zoom, MIN_ZOOM, "a NaN step changes nothing");
        // A box round points: the margin on each side, and a least side.
        let b = Focus::around([Point2::new(0.0, 0.0), Point2::new(0.1, 0.05)], 0.2, 0.01).unwrap();
        assert!((b.size[0] - 0.14).abs() < 1e-12 && (b.size[1] - 0.09).abs() < 1e-12, "{b:?}");
        assert!(b.contains(Point2::new(0.1, 0.05)) && !b.contains(Point2::new(0.2, 0.0)));
        let one = Focus::around([Point2::new(1.0, 1.0)], 0.2, 0.04).unwrap();
        assert_eq!(one.size, [0.04, 0.04]);
        assert_eq!(Focus::around([Point2::new(f64::NAN, 0.0)], 0.2, 0.04), None);
    }

    #[test]
    fn a_click_within_one_frame_moves_the_target_and_a_drag_follows_until_release() {
        assert_eq!(press(false, true, false, true), (true, false), "pressed and released in one frame");
        assert_eq!(press(false, true, true, true), (true, true), "a press starts a drag");
        assert_eq!(press(true, false, true, true), (true, true), "the drag goes on");
        assert_eq!(press(true, false, false, true), (false, false), "released");
        assert_eq!(press(false, true, true, false), (false, false), "a press over the panel is the panel's");
        assert_eq!(press(false, false, true, true), (false, false), "a drag from the panel into the view");
        assert_eq!(press(true, false, true, false), (false, true), "a drag paused over the panel");
    }
}
