//! The throughput plot: per-path throughput at the confluence point, per-flow goodput and
//! DWRR's weights over time, like Figs. 10 and 11 of Motohashi et al.; the comparison's bars.

use mpsched_run::TimeSeries;
use mpsched_scenario::completion::{CompletionRow, MICE_BELOW_BYTES};
use mpsched_sim::sweep::SweepRow;
use plotters::prelude::*;
use std::path::Path;

/// Tableau's ten: distinct enough that eight paths never share a colour.
const COLORS: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// The panels of a run's plot, top to bottom.
#[derive(Debug, PartialEq, Eq)]
pub enum Panel {
    /// Wire rate per path into the confluence point (scenarios with paths).
    Paths,
    /// Goodput per flow at the receiver.
    Flows,
    /// DWRR's weight registers (columns `*_weightN`), when the run has them.
    Weights,
}

/// Which panels a run's plot has: no empty path panel for a scenario without paths (TCP
/// runs), and a weights panel for DWRR.
pub fn panels_for(series: &TimeSeries, paths: &[String]) -> Vec<Panel> {
    let mut out = Vec::new();
    if !paths.is_empty() {
        out.push(Panel::Paths);
    }
    out.push(Panel::Flows);
    if !weight_columns(series).is_empty() {
        out.push(Panel::Weights);
    }
    out
}

fn weight_columns(series: &TimeSeries) -> Vec<String> {
    series
        .columns
        .iter()
        .filter(|c| c.rsplit_once("_weight").is_some_and(|(_, n)| n.parse::<u32>().is_ok()))
        .cloned()
        .collect()
}

/// Draw `series` into a PNG at `out`, one panel per [`panels_for`]: the `*_mbps` columns of
/// `paths`, those of `flows`, and DWRR's weights. `title` names the scenario, the variant and
/// the backend.
pub fn throughput_png(
    series: &TimeSeries,
    title: &str,
    paths: &[String],
    flows: &[String],
    out: &Path,
) -> anyhow::Result<()> {
    let panels = panels_for(series, paths);
    let root = BitMapBackend::new(out, (1100, 40 + 360 * panels.len() as u32)).into_drawing_area();
    root.fill(&WHITE)?;
    let (head, body) = root.split_vertically(40);
    head.titled(title, ("sans-serif", 22))?;
    let t = series.values("time_s").unwrap_or_default();
    let t_max = t.last().copied().unwrap_or(1.0).max(1.0);
    for (area, panel) in body.split_evenly((panels.len(), 1)).iter().zip(&panels) {
        let (caption, y_desc, names): (&str, &str, Vec<String>) = match panel {
            Panel::Paths => (
                "throughput per path (wire, into the confluence point)",
                "Mbit/s",
                paths.iter().map(|p| format!("{p}_mbps")).collect(),
            ),
            Panel::Flows => (
                "goodput per flow (payload at the receiver)",
                "Mbit/s",
                flows.iter().map(|f| format!("{f}_mbps")).collect(),
            ),
            Panel::Weights => ("DWRR weights (registers)", "weight", weight_columns(series)),
        };
        let lines: Vec<(String, Vec<f64>, Vec<f64>)> = names
            .iter()
            .filter_map(|n| {
                let label = n.strip_suffix("_mbps").unwrap_or(n).to_string();
                series.values(n).map(|v| (label, t.clone(), v))
            })
            .collect();
        draw_lines(area, caption, y_desc, t_max, &lines)?;
    }
    root.present()?;
    Ok(())
}

/// One chart of named lines (name, times, values) against time, with a legend.
fn draw_lines<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    caption: &str,
    y_desc: &str,
    t_max: f64,
    lines: &[(String, Vec<f64>, Vec<f64>)],
) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    let y_max = lines
        .iter()
        .flat_map(|(_, _, v)| v.iter().copied())
        .fold(1.0f64, f64::max)
        * 1.15;
    // The legend goes beside the chart, never over the data.
    let (plot_area, legend_area) = area.split_horizontally(area.dim_in_pixel().0.saturating_sub(LEGEND_PX));
    let mut chart = ChartBuilder::on(&plot_area)
        .caption(caption, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(56)
        .build_cartesian_2d(0.0..t_max, 0.0..y_max)?;
    chart.configure_mesh().x_desc("time (s)").y_desc(y_desc).draw()?;
    for (i, (name, t, v)) in lines.iter().enumerate() {
        let c = COLORS[i % COLORS.len()];
        chart.draw_series(LineSeries::new(
            t.iter().copied().zip(v.iter().copied()),
            c.stroke_width(2),
        ))?;
        legend_entry(&legend_area, i, name, c)?;
    }
    Ok(())
}

/// Line `i`'s entry in the legend column beside a chart.
fn legend_entry<DB: DrawingBackend>(
    legend_area: &DrawingArea<DB, plotters::coord::Shift>,
    i: usize,
    name: &str,
    c: RGBColor,
) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    let y = 40 + 20 * i as i32;
    legend_area.draw(&PathElement::new(vec![(4, y), (26, y)], c.stroke_width(3)))?;
    legend_area.draw(&Text::new(name.to_string(), (32, y - 7), ("sans-serif", 14)))?;
    Ok(())
}

/// Width of the legend column beside each chart, pixels.
const LEGEND_PX: u32 = 190;

/// Total goodput of `flows` over time, one line per variant, in MiB/s (as the AFMT paper's
/// Figs. 4 and 5 plot it).
pub fn total_goodput_png(
    title: &str,
    variants: &[(String, &TimeSeries)],
    flows: &[String],
    out: &Path,
) -> anyhow::Result<()> {
    let root = BitMapBackend::new(out, (1100, 480)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut lines = Vec::new();
    let mut t_max: f64 = 1.0;
    for (name, series) in variants {
        let t = series.values("time_s").unwrap_or_default();
        t_max = t_max.max(t.last().copied().unwrap_or(1.0));
        let mut total = vec![0.0; t.len()];
        for f in flows {
            if let Some(v) = series.values(&format!("{f}_mbps")) {
                for (a, b) in total.iter_mut().zip(v) {
                    *a += b * 1e6 / 8.0 / f64::from(1u32 << 20);
                }
            }
        }
        lines.push((name.clone(), t, total));
    }
    draw_lines(
        &root,
        &format!("{title}: total goodput of the tunnelled flows"),
        "MiB/s",
        t_max,
        &lines,
    )?;
    root.present()?;
    Ok(())
}

/// What the ATSSS plot shows of one tunnel direction: its name prefix in the series
/// (`<tunnel>_down`), its subtunnels' path names (preferred first) and the column of the
/// preferred path's capacity, if a trace drives it.
pub struct TunnelPlot {
    /// Series prefix of the direction, as `ue_down`.
    pub prefix: String,
    /// The subtunnels' path names, preferred first.
    pub subtunnels: Vec<String>,
    /// `<link>_rate_mbps` of the preferred path's traced link.
    pub capacity_column: Option<String>,
}

/// Per variant, what a multipath tunnel's scheduler did with its preferred path over time
/// (ATSSS): the rate it carried (against its capacity), its smoothed RTT (log scale), and
/// its share of the packets per interval.
pub fn tunnel_paths_png(
    title: &str,
    variants: &[(String, &TimeSeries)],
    tunnel: &TunnelPlot,
    out: &Path,
) -> anyhow::Result<()> {
    let root = BitMapBackend::new(out, (1100, 40 + 3 * 360)).into_drawing_area();
    root.fill(&WHITE)?;
    let (head, body) = root.split_vertically(40);
    head.titled(title, ("sans-serif", 22))?;
    let panels = body.split_evenly((3, 1));
    let preferred = &tunnel.subtunnels[0];
    let mut t_max: f64 = 1.0;
    let (mut rates, mut rtts, mut shares) = (Vec::new(), Vec::new(), Vec::new());
    for (name, series) in variants {
        let t = series.values("time_s").unwrap_or_default();
        t_max = t_max.max(t.last().copied().unwrap_or(1.0));
        // Samples finer than 100 ms are averaged into 100 ms bins: a 10 ms interval carries a
        // handful of packets, and its rate is noise.
        let dt = if t.len() > 1 { t[1] - t[0] } else { 0.1 };
        let k = ((0.1 / dt).round() as usize).max(1);
        let bin = |v: &[f64]| -> Vec<f64> { v.chunks(k).map(|c| c.iter().sum::<f64>() / c.len() as f64).collect() };
        let tb: Vec<f64> = t.chunks(k).map(|c| c[c.len() - 1]).collect();
        if let Some(v) = series.values(&format!("{preferred}_mbps")) {
            rates.push((name.clone(), tb.clone(), bin(&v)));
        }
        if let Some(v) = series.values(&format!("{}_{preferred}_srtt_ms", tunnel.prefix)) {
            // Before the first sample the RTT is 0, which a log scale cannot show.
            let (tt, vv): (Vec<f64>, Vec<f64>) = t.iter().copied().zip(v).filter(|p| p.1 > 0.0).unzip();
            rtts.push((name.clone(), tt, vv));
        }
        let counts: Vec<Vec<f64>> = tunnel
            .subtunnels
            .iter()
            .filter_map(|s| series.values(&format!("{}_{s}_pkts", tunnel.prefix)))
            .collect();
        if counts.len() == tunnel.subtunnels.len() {
            // Cumulative counters: every k-th sample is the bin's end.
            let ends: Vec<Vec<f64>> = counts
                .iter()
                .map(|c| c.iter().copied().skip(k - 1).step_by(k).collect())
                .collect();
            let te: Vec<f64> = t.iter().copied().skip(k - 1).step_by(k).collect();
            shares.push((name.clone(), te, interval_shares(&ends)));
        }
    }
    if let Some(col) = &tunnel.capacity_column {
        if let Some((_, series)) = variants.first() {
            if let (Some(t), Some(v)) = (series.values("time_s"), series.values(col)) {
                rates.push((format!("capacity ({col})"), t, v));
            }
        }
    }
    draw_lines(
        &panels[0],
        &format!("rate carried on the preferred path `{preferred}`"),
        "Mbit/s",
        t_max,
        &rates,
    )?;
    draw_log_lines(
        &panels[1],
        &format!("smoothed RTT of `{preferred}` (log scale)"),
        "ms",
        t_max,
        &rtts,
    )?;
    draw_lines(
        &panels[2],
        "packets sent on the preferred path, per interval",
        "%",
        t_max,
        &shares,
    )?;
    root.present()?;
    Ok(())
}

/// Per interval, the first counter's share of the increase of all (cumulative counters in,
/// percent out; 0 where nothing was sent).
fn interval_shares(counts: &[Vec<f64>]) -> Vec<f64> {
    let n = counts[0].len();
    (0..n)
        .map(|i| {
            let delta = |c: &Vec<f64>| c[i] - if i == 0 { 0.0 } else { c[i - 1] };
            let total: f64 = counts.iter().map(delta).sum();
            if total > 0.0 {
                100.0 * delta(&counts[0]) / total
            } else {
                0.0
            }
        })
        .collect()
}

/// [`draw_lines`] on a logarithmic value axis.
fn draw_log_lines<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    caption: &str,
    y_desc: &str,
    t_max: f64,
    lines: &[(String, Vec<f64>, Vec<f64>)],
) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    let values = || lines.iter().flat_map(|(_, _, v)| v.iter().copied());
    // At least a decade from end to end, so the axis has a labelled line.
    let y_max = values().fold(1.0f64, f64::max) * 3.0;
    let y_min = (values().fold(y_max, f64::min).max(1e-3) / 3.0).min(y_max / 10.0);
    let (plot_area, legend_area) = area.split_horizontally(area.dim_in_pixel().0.saturating_sub(LEGEND_PX));
    let mut chart = ChartBuilder::on(&plot_area)
        .caption(caption, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(56)
        .build_cartesian_2d(0.0..t_max, (y_min..y_max).log_scale())?;
    chart.configure_mesh().x_desc("time (s)").y_desc(y_desc).draw()?;
    for (i, (name, t, v)) in lines.iter().enumerate() {
        let c = COLORS[i % COLORS.len()];
        chart.draw_series(LineSeries::new(
            t.iter().copied().zip(v.iter().copied()),
            c.stroke_width(2),
        ))?;
        legend_entry(&legend_area, i, name, c)?;
    }
    Ok(())
}

/// The comparison as grouped bars: per flow and path, the simulator's and the kernel's rate
/// side by side (a bar each, labelled below).
pub fn compare_png(title: &str, rows: &[crate::compare::CompareRow], out: &Path) -> anyhow::Result<()> {
    let width = (160 + 90 * rows.len() as u32).clamp(700, 4000);
    let root = BitMapBackend::new(out, (width, 560)).into_drawing_area();
    root.fill(&WHITE)?;
    let top = rows
        .iter()
        .map(|r| r.sim_mbps.max(r.netns_mbps).max(r.bmv2_mbps.unwrap_or(0.0)))
        .fold(0.0_f64, f64::max)
        .max(1e-6)
        * 1.15;
    let n = rows.len().max(1) as f64;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(70)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..n, 0.0..top)?;
    let label = |x: &f64| {
        let i = *x as usize;
        rows.get(i)
            .filter(|_| (x.fract() - 0.5).abs() < 1e-9)
            .map(|r| format!("{} {}", r.variant, r.id))
            .unwrap_or_default()
    };
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(2 * rows.len() + 1)
        .x_label_formatter(&label)
        .y_desc("Mbit/s (flows: goodput; paths: wire rate)")
        .draw()?;
    type Value = fn(&crate::compare::CompareRow) -> f64;
    let mut backends: Vec<(&str, RGBColor, Value)> = vec![
        ("simulator", COLORS[0], |r| r.sim_mbps),
        ("kernel (netns)", COLORS[2], |r| r.netns_mbps),
    ];
    if rows.iter().any(|r| r.bmv2_mbps.is_some()) {
        backends.push(("BMv2 (netns)", COLORS[1], |r| r.bmv2_mbps.unwrap_or(0.0)));
    }
    let width = 0.8 / backends.len() as f64;
    for (k, (name, color, value)) in backends.into_iter().enumerate() {
        let bars = rows.iter().enumerate().map(|(i, r)| {
            let x0 = i as f64 + 0.1 + width * k as f64;
            Rectangle::new([(x0, 0.0), (x0 + width * 0.95, value(r))], color.filled())
        });
        chart
            .draw_series(bars)?
            .label(name)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled()));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

/// One line of [`fct_cdf_png`]: `name` and the finished transfers' completion times in ms, of
/// all of `rows` and of the mice among them.
pub fn fct_cdf_line(name: String, rows: &[CompletionRow]) -> (String, Vec<f64>, Vec<f64>) {
    let ms = |keep: fn(u64) -> bool| -> Vec<f64> {
        rows.iter()
            .filter(|x| keep(x.size_bytes))
            .filter_map(|x| x.fct_s.map(|f| f * 1e3))
            .collect()
    };
    (name, ms(|_| true), ms(|b| b < MICE_BELOW_BYTES))
}

/// The distribution of completion times, one line per variant, all flows and mice apart
/// (`lines`: variant, completion times in ms of (all, mice)); times on a log axis.
pub fn fct_cdf_png(title: &str, lines: &[(String, Vec<f64>, Vec<f64>)], out: &Path) -> anyhow::Result<()> {
    let root = BitMapBackend::new(out, (1200, 520)).into_drawing_area();
    root.fill(&WHITE)?;
    let (head, body) = root.split_vertically(44);
    head.titled(title, ("sans-serif", 22))?;
    let all = lines
        .iter()
        .flat_map(|(_, a, m)| a.iter().chain(m))
        .copied()
        .filter(|x| *x > 0.0);
    let (lo, hi) = all.fold((f64::INFINITY, 0.0f64), |(lo, hi), x| (lo.min(x), hi.max(x)));
    let (lo, hi) = if lo.is_finite() {
        (lo / 1.5, hi * 1.5)
    } else {
        (0.01, 1.0)
    };
    for (panel, area) in body.split_evenly((1, 2)).iter().enumerate() {
        let caption = ["all flows", "mice (< 100 KB)"][panel];
        let mut chart = ChartBuilder::on(area)
            .caption(caption, ("sans-serif", 17))
            .margin(14)
            .x_label_area_size(38)
            .y_label_area_size(50)
            .build_cartesian_2d((lo..hi).log_scale(), 0.0..1.0)?;
        chart
            .configure_mesh()
            .x_desc("completion time (ms)")
            .y_desc("fraction of finished flows")
            .draw()?;
        for (i, (name, a, m)) in lines.iter().enumerate() {
            let mut xs: Vec<f64> = if panel == 0 { a.clone() } else { m.clone() };
            xs.retain(|x| *x > 0.0);
            xs.sort_by(f64::total_cmp);
            let n = xs.len() as f64;
            let c = COLORS[i % COLORS.len()];
            chart
                .draw_series(LineSeries::new(
                    xs.iter().enumerate().map(|(k, x)| (*x, (k + 1) as f64 / n)),
                    c.stroke_width(2),
                ))?
                .label(name.clone())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(3)));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()?;
    }
    root.present()?;
    Ok(())
}

/// An axis value without float noise: `0.3`, not `0.30000000000000004`.
fn tick(x: f64) -> String {
    let s = format!("{x:.4}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A sweep's figures against its parameter, one line per variant (means over seeds, a bar for
/// the 95 % confidence interval of the mean, Student's t over the seeds): completion times as MP-HULA's Figs. 5-10 plot them when the
/// scenario has transfers, delivered rate otherwise.
pub fn sweep_png(title: &str, x_desc: &str, rows: &[SweepRow], out: &Path) -> anyhow::Result<()> {
    let has = |n: &str| {
        rows.iter()
            .any(|r| r.figures.iter().any(|(k, f)| *k == n && f.is_some()))
    };
    let panels: Vec<(&str, &str)> = if has("fct_mean_ms") {
        vec![
            ("fct_mean_ms", "mean completion time, all flows (ms)"),
            ("fct_p99_ms", "99th percentile, all flows (ms)"),
            ("mice_fct_mean_ms", "mean completion time, mice < 100 KB (ms)"),
            ("elephants_fct_mean_ms", "mean completion time, elephants > 10 MB (ms)"),
        ]
    } else {
        vec![("delivered_mbps", "delivered, all flows (Mbit/s)")]
    };
    let axis = SweepAxis::of(rows);
    let cols = if panels.len() > 1 { 2 } else { 1 };
    let grid_rows = panels.len().div_ceil(cols);
    let root = BitMapBackend::new(out, (1200, 50 + 420 * grid_rows as u32)).into_drawing_area();
    root.fill(&WHITE)?;
    let (head, body) = root.split_vertically(50);
    head.titled(title, ("sans-serif", 22))?;
    for (area, (column, caption)) in body.split_evenly((grid_rows, cols)).iter().zip(&panels) {
        draw_sweep_panel(area, caption, x_desc, &axis, &sweep_lines(rows, column, &axis))?;
    }
    root.present()?;
    Ok(())
}

/// A sweep's x axis: numeric values where they all parse, else evenly spaced labels.
struct SweepAxis {
    values: Vec<String>,
    numeric: Option<Vec<f64>>,
}

impl SweepAxis {
    fn of(rows: &[SweepRow]) -> SweepAxis {
        let mut values: Vec<String> = Vec::new();
        for r in rows {
            if !values.contains(&r.value) {
                values.push(r.value.clone());
            }
        }
        let numeric = values.iter().map(|v| v.parse::<f64>().ok()).collect();
        SweepAxis { values, numeric }
    }

    fn x(&self, value: &str) -> f64 {
        let i = self.values.iter().position(|v| v == value).unwrap_or(0);
        self.numeric.as_ref().map_or(i as f64, |xs| xs[i])
    }

    fn range(&self) -> std::ops::Range<f64> {
        match &self.numeric {
            Some(xs) => {
                let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
                let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let pad = ((hi - lo) * 0.05).max(1e-9);
                lo - pad..hi + pad
            }
            None => -0.5..self.values.len() as f64 - 0.5,
        }
    }

    fn label(&self, x: f64) -> String {
        match &self.numeric {
            Some(_) => tick(x),
            None => self
                .values
                .get(x.round() as usize)
                .filter(|_| (x - x.round()).abs() < 1e-6)
                .cloned()
                .unwrap_or_default(),
        }
    }
}

/// One line of a sweep panel: a variant's (x, [mean, min, max]) points.
type SweepLine = (String, Vec<(f64, [f64; 5])>);

fn sweep_lines(rows: &[SweepRow], column: &str, axis: &SweepAxis) -> Vec<SweepLine> {
    let mut variants: Vec<Option<&str>> = Vec::new();
    for r in rows {
        if !variants.contains(&r.variant.as_deref()) {
            variants.push(r.variant.as_deref());
        }
    }
    variants
        .iter()
        .map(|var| {
            let pts = rows
                .iter()
                .filter(|r| r.variant.as_deref() == *var)
                .filter_map(|r| {
                    let f = r.figures.iter().find(|(k, _)| *k == column).and_then(|(_, f)| *f)?;
                    Some((axis.x(&r.value), f))
                })
                .collect();
            (var.unwrap_or("run").to_string(), pts)
        })
        .collect()
}

fn draw_sweep_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    caption: &str,
    x_desc: &str,
    axis: &SweepAxis,
    lines: &[SweepLine],
) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    let y_max = lines
        .iter()
        .flat_map(|(_, p)| p.iter().map(|(_, f)| f[4].max(f[0])))
        .fold(1e-9f64, f64::max)
        * 1.1;
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 17))
        .margin(14)
        .x_label_area_size(38)
        .y_label_area_size(64)
        .build_cartesian_2d(axis.range(), 0.0..y_max)?;
    let label = |x: &f64| axis.label(*x);
    chart.configure_mesh().x_desc(x_desc).x_label_formatter(&label).draw()?;
    for (i, (name, pts)) in lines.iter().enumerate() {
        let c = COLORS[i % COLORS.len()];
        chart
            .draw_series(LineSeries::new(pts.iter().map(|(x, f)| (*x, f[0])), c.stroke_width(2)))?
            .label(name.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(3)));
        chart.draw_series(pts.iter().map(|(x, f)| Circle::new((*x, f[0]), 3, c.filled())))?;
        chart.draw_series(
            pts.iter()
                .map(|(x, f)| ErrorBar::new_vertical(*x, f[3].max(0.0), f[0], f[4], c.stroke_width(1), 6)),
        )?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(columns: &[&str]) -> TimeSeries {
        TimeSeries {
            columns: columns.iter().map(|c| c.to_string()).collect(),
            rows: vec![vec![0.0; columns.len()]],
        }
    }

    /// Hardening item 18: no empty path panel in a TCP run, a weights panel for DWRR, and a
    /// palette in which eight paths never share a colour.
    #[test]
    fn panels_follow_the_run_and_eight_series_have_eight_colours() {
        let tcp = series(&["time_s", "tcp1_mbps", "tcp2_mbps"]);
        assert_eq!(panels_for(&tcp, &[]), vec![Panel::Flows]);
        let dwrr = series(&[
            "time_s",
            "path1_mbps",
            "flow1_mbps",
            "ap1_group0_weight1",
            "ap1_group0_weight2",
        ]);
        assert_eq!(
            panels_for(&dwrr, &["path1".into()]),
            vec![Panel::Paths, Panel::Flows, Panel::Weights]
        );
        let distinct: std::collections::HashSet<_> = COLORS[..8].iter().map(|c| (c.0, c.1, c.2)).collect();
        assert_eq!(distinct.len(), 8);
    }

    #[test]
    fn ticks_have_no_float_noise() {
        assert_eq!(tick(0.1 + 0.2), "0.3");
        assert_eq!(tick(40.0), "40");
        assert_eq!(tick(0.125), "0.125");
    }
}
