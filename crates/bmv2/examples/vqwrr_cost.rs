//! Prints the BMv2 cost of vq-wrr's data packet beside mpsched.p4's (`mpsched_bmv2::vqwrr::costs`);
//! root.
fn main() {
    let n = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(400);
    match mpsched_bmv2::vqwrr::costs(n) {
        Ok(rows) => {
            for (what, ns) in rows {
                println!("{what:<48} {ns:>9.0} ns/frame");
            }
        }
        Err(e) => eprintln!("{e}"),
    }
}
