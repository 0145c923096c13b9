//! The cameras and the pointer: the world camera renders into the part of the window right of
//! the egui panel (its viewport follows the panel's width, so the arm stays centred there), a
//! second camera renders egui over the whole window, and left-button drags inside the world
//! viewport become world-space [`PointerDrag`] messages. Drags that start over the panel, or
//! wander onto it, do not move the target.

use super::AppSet;
use super::state::arm::{Lab, Nominal};
use super::state::view::{Hover, PanelWidth, PointerDrag};
use bevy::camera::visibility::RenderLayers;
use bevy::camera::{CameraOutputMode, ScalingMode, Viewport};
use bevy::prelude::*;
use bevy::render::render_resource::BlendState;
use bevy::window::PrimaryWindow;
use bevy_egui::input::EguiWantsInput;
use bevy_egui::{EguiGlobalSettings, PrimaryEguiContext};
use elbow::Point2;

/// Registers the cameras and the viewport and pointer systems.
pub(crate) fn plugin(app: &mut App) {
    app.add_systems(Startup, spawn_cameras).add_systems(
        Update,
        (fit_span.run_if(resource_changed::<Lab>.or_else(resource_changed::<Nominal>)), fit_viewport, pointer)
            .chain()
            .in_set(AppSet::Input),
    );
}

/// Background of the world viewport.
const BACKGROUND: Color = Color::srgb(0.07, 0.075, 0.09);

/// Logical pixels right of the panel edge that still belong to the panel's resize handle.
const HANDLE_MARGIN: f32 = 6.0;

/// The world camera.
#[derive(Component)]
pub(crate) struct WorldCamera;

/// Spawns the world camera (metres, the whole workspace in view) and the egui camera on top.
fn spawn_cameras(mut commands: Commands, mut egui: ResMut<EguiGlobalSettings>, lab: Res<Lab>, nominal: Res<Nominal>) {
    // The egui context goes on the second camera, which covers the whole window.
    egui.auto_create_primary_context = false;
    let span = span(&lab, &nominal);
    commands.spawn((
        WorldCamera,
        Camera2d,
        Camera { clear_color: ClearColorConfig::Custom(BACKGROUND), ..default() },
        Projection::Orthographic(OrthographicProjection {
            scaling_mode: ScalingMode::AutoMin { min_width: span, min_height: span },
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

/// The world span the camera shows for the open lab, metres: the two-link arm's reach, or the
/// chain's reach plus its rail's travel, with a margin.
fn span(lab: &Lab, nominal: &Nominal) -> f32 {
    match lab.chain() {
        Some(arm) => 2.15 * arm.extent() as f32,
        None => 2.3 * nominal.0.reach() as f32,
    }
}

/// Fits the world camera's span to the open lab's arm.
fn fit_span(lab: Res<Lab>, nominal: Res<Nominal>, mut projection: Single<&mut Projection, With<WorldCamera>>) {
    let span = span(&lab, &nominal);
    if let Projection::Orthographic(o) = &mut **projection {
        o.scaling_mode = ScalingMode::AutoMin { min_width: span, min_height: span };
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
    use super::press;

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
