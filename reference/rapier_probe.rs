// Engine probe (not part of the build or CI): the two-link arm of our plant in rapier2d-f64 0.36's
// multibody joints with position motors, stepped at 1 ms. To run: `cargo new probe`, add
// `rapier2d-f64 = "0.36"` to its [dependencies], put this file at src/main.rs, `cargo run --release`.
// rapier has no armature, so the rotor's 0.028 kg m^2 is missing here (a known difference).
// A two-link arm of 50 g, 1 m rods with position motors in rapier2d-f64's multibody joints,
// stepped at 1 ms: the cost per step, and the step response of joint 1 (0.5 rad).
use rapier2d_f64::prelude::*;
fn main() {
    let mut bodies = RigidBodySet::new();
    let mut colliders = ColliderSet::new();
    let mut multibody = MultibodyJointSet::new();
    let impulse = ImpulseJointSet::new();
    let base = bodies.insert(RigidBodyBuilder::fixed());
    let rod = |x: f64| RigidBodyBuilder::dynamic().translation(Vector::new(x, 0.0)).additional_mass_properties(MassProperties::new(Vector::new(0.0, 0.0), 0.05, 0.05 / 12.0)).build();
    let l1 = bodies.insert(rod(0.5));
    let l2 = bodies.insert(rod(1.5));
    let j = |a: Vector, b: Vector| RevoluteJointBuilder::new().local_anchor1(a).local_anchor2(b)
        .motor_position(0.0, 998.22, 2.731).motor_max_force(2.94);
    let h1 = multibody.insert(base, l1, j(Vector::new(0.0, 0.0), Vector::new(-0.5, 0.0)), true).unwrap();
    let _h2 = multibody.insert(l1, l2, j(Vector::new(0.5, 0.0), Vector::new(-0.5, 0.0)), true).unwrap();
    let _ = &mut colliders;
    let mut params = IntegrationParameters::default();
    params.dt = 1e-3;
    let mut pipeline = PhysicsPipeline::new();
    let mut islands = IslandManager::new();
    let mut broad = BroadPhaseBvh::new();
    let mut soft = SoftBodySet::new();
    let mut narrow = NarrowPhase::new();
    let mut ccd = CCDSolver::new();
    let gravity = Vector::new(0.0, 0.0);
    // Goal of joint 1: 0.5 rad.
    {
        let (mb, link) = multibody.get_mut(h1).unwrap();
        let joint = &mut mb.link_mut(link).unwrap().joint;
        joint.data.set_motor_position(JointAxis::AngX, 0.5, 998.22, 2.731);
    }
    let steps = 20000;
    let t = std::time::Instant::now();
    for i in 0..steps {
        pipeline.step(gravity, &params, &mut islands, &mut broad, &mut narrow, &mut bodies, &mut colliders, &mut ImpulseJointSet::new(), &mut multibody, &mut soft, &mut ccd, &(), &());
        if i % 100 == 0 && i < 2000 {
            let r = bodies[l1].rotation().angle();
            println!("t {:.3} q1 {:.4}", (i + 1) as f64 * 1e-3, r);
        }
    }
    let _ = impulse;
    println!("{:.0} ns per 1 ms step (two links, motors)", t.elapsed().as_secs_f64() / steps as f64 * 1e9);
}
