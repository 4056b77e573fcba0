//! `[[variant]]`: named changes to a scenario.

use super::*;

/// `[[variant]]`: names unique; each is applied when asked for.
pub(super) fn variants_of(ctx: &Ctx<'_>, raw_variants: &[RawVariant]) -> Result<Vec<Variant>, ScenarioError> {
    let mut variants = Vec::new();
    let mut seen = BTreeMap::new();
    for (i, v) in raw_variants.iter().enumerate() {
        check_name(ctx, format!("variant[{i}].name"), &v.name)?;
        if seen.insert(v.name.clone(), i).is_some() {
            return Err(ctx.err(
                format!("variant[{i}].name"),
                format!("duplicate variant name `{}`", v.name),
            ));
        }
        variants.push(Variant {
            name: v.name.clone(),
            raw: v.clone(),
        });
    }
    Ok(variants)
}
