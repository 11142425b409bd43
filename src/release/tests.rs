use super::*;
use crate::sizing::{HeadroomVariant, SglangVersion as V};

#[test]
fn latest_is_0_5_23_and_the_default() {
    assert_eq!(
        Sglang::from_id("latest").unwrap(),
        Sglang::Release(Release::V0_5_23)
    );
    assert_eq!(Sglang::DEFAULT.id(), "0.5.23");
    assert_eq!(Sglang::DEFAULT.release_id(), "0.5.23");
    assert_eq!(Sglang::from_id("v0.5.21").unwrap().id(), "0.5.21");
}

#[test]
fn every_release_id_parses_back() {
    for r in Release::ALL {
        assert_eq!(Sglang::from_id(r.id()).unwrap(), Sglang::Release(r));
    }
    for v in V::ALL {
        assert_eq!(Sglang::from_id(v.id()).unwrap(), Sglang::WhatIf(v));
    }
    let e = Sglang::from_id("0.5.24").unwrap_err().to_string();
    assert!(e.contains("the newest is 0.5.23"), "{e}");
    let e = Sglang::from_id("page-cache-credti")
        .unwrap_err()
        .to_string();
    assert!(e.contains("did you mean `page-cache-credit`"), "{e}");
}

#[test]
fn aliases_resolve_to_their_predecessor() {
    for r in Release::ALL {
        if let Some(p) = r.same_as() {
            assert_eq!(r.rules(), p.rules(), "{r}");
        }
    }
    // Releases that are not aliases differ from the one before.
    for w in Release::ALL.windows(2) {
        if w[1].same_as().is_none() {
            assert_ne!(w[0].rules(), w[1].rules(), "{} vs {}", w[0], w[1]);
        }
    }
}

#[test]
fn sizing_of_each_release() {
    assert_eq!(Release::V0_5_14.rules().sizing, V::Pre28614.rules());
    assert_eq!(Release::V0_5_18.rules().sizing, V::Pr28614.rules());
    assert_eq!(Release::V0_5_20.rules().sizing, V::Pr35540.rules());
    assert_eq!(Release::V0_5_21.rules().sizing, V::Pr40135.rules());
    let s = Release::V0_5_23.rules().sizing;
    assert_eq!(
        s.available,
        crate::sizing::AvailableReading::CgroupMin(HeadroomVariant::ProtectedDescendants)
    );
    assert!(s.allow_cgroup_fallback);
    // 0.5.23 is not page-cache-credit and not explicit-snapshot.
    assert_ne!(s, V::PageCacheCredit.rules());
    assert_ne!(s.explicit_path, V::ExplicitSnapshot.rules().explicit_path);
}

#[test]
fn first_shipped_and_nearest() {
    assert_eq!(first_shipped(V::Pr40135), Some(Release::V0_5_21));
    assert_eq!(first_shipped(V::Pr35540), Some(Release::V0_5_19));
    assert_eq!(first_shipped(V::Pr28614), Some(Release::V0_5_15));
    assert_eq!(first_shipped(V::Pre28614), Some(Release::V0_5_14));
    for v in [
        V::Pr40135WholeHeadroom,
        V::PageCacheCredit,
        V::PageCacheCreditClean,
        V::ExplicitSnapshot,
        V::AutoHicache,
    ] {
        assert_eq!(first_shipped(v), None, "{v}");
    }
    assert_eq!(Sglang::WhatIf(V::ExplicitSnapshot).release_id(), "0.5.23");
    assert_eq!(Sglang::WhatIf(V::PageCacheCredit).release_id(), "0.5.22");
    assert_eq!(Sglang::WhatIf(V::Pr35540).release_id(), "0.5.19");
}

#[test]
fn controller_defaults_move_with_releases() {
    let c14 = Release::V0_5_14.rules().controller;
    assert_eq!(c14.prefetch_timeout.max_ms, Some(30_000));
    assert_eq!(
        (
            c14.prefetch_timeout.base_ms,
            c14.prefetch_timeout.per_ki_token_ms
        ),
        (2000, 100)
    );
    let c23 = Release::V0_5_23.rules().controller;
    assert_eq!(c23.prefetch_timeout.max_ms, None);
    assert_eq!(
        (
            c23.prefetch_timeout.base_ms,
            c23.prefetch_timeout.per_ki_token_ms
        ),
        (1000, 250)
    );
    assert_eq!(
        c23.prefetch_timeout_clock,
        PrefetchTimeoutClock::FirstBlockedPoll
    );
    assert_eq!(
        Release::V0_5_22.rules().controller.prefetch_timeout_clock,
        PrefetchTimeoutClock::Issue
    );
    assert_eq!(
        (
            c23.prefetch_retries.poll_interval,
            c23.prefetch_retries.max_attempts
        ),
        (8, 8)
    );
    assert_eq!(
        c23.eviction_choices.choices(),
        ["lru", "lfu", "slru", "priority", "tlru"]
    );
    assert_eq!(
        Release::V0_5_20
            .rules()
            .controller
            .eviction_choices
            .choices()
            .len(),
        4
    );
    assert_eq!(
        c23.buffer_only_write_back,
        BufferOnlyWriteBack::CoerceWriteThrough
    );
    assert_eq!(
        Release::V0_5_21.rules().controller.buffer_only_write_back,
        BufferOnlyWriteBack::Error
    );
    assert!(!Release::V0_5_20.rules().flags.hicache_host_memory_fraction);
    assert!(Release::V0_5_21.rules().flags.hicache_host_memory_fraction);
    assert!(
        !Sglang::WhatIf(V::Pr35540)
            .release_rules()
            .flags
            .hicache_host_memory_fraction
    );
    assert_eq!(
        Release::V0_5_18.rules().tree,
        crate::cache::TreeKind::HiRadix
    );
    assert_eq!(
        Release::V0_5_19.rules().tree,
        crate::cache::TreeKind::Unified0523
    );
}

/// The controller fields listed as reported, not modelled, are fields `versions` prints,
/// and say what the simulation uses instead: buffer_only's 0.9 cap from the first
/// release that has the mode (0.5.19), the scenario's default prefetch policy.
#[test]
fn reported_not_modelled_fields_agree_with_what_runs() {
    use crate::release::rules::REPORTED_NOT_MODELLED;
    for r in Release::ALL {
        let c = r.rules().controller;
        let json = serde_json::to_value(c).unwrap();
        for f in REPORTED_NOT_MODELLED {
            assert!(json.get(f).is_some(), "{r}: {f}");
        }
        assert_eq!(c.buffer_only_cap_090, r >= Release::V0_5_19, "{r}");
        assert_eq!(
            c.default_prefetch_policy,
            crate::domain::ServerArgs::default().hicache_storage_prefetch_policy,
            "{r}"
        );
    }
}

/// The log wording along the rule chain, release by release (the table `LogRules::of`
/// held before it moved into `ReleaseRules`): unlabelled `Allocating` lines up to 0.5.16,
/// 0.5.14's assert, chunked registration from 0.5.19, the headroom and auto-size lines
/// from 0.5.21, the Mamba slot count from 0.5.23; a what-if words its lines as its
/// nearest release.
#[test]
fn log_wording_along_the_chain() {
    use crate::release::log_lines::{AllocatingLine as A, HostRegister as H, SmallHostLine as S};
    use Release as R;
    for r in Release::ALL {
        let l = r.rules().log;
        let (alloc, small) = match r {
            R::V0_5_14 => (A::Unlabelled, S::Asserts),
            R::V0_5_15 | R::V0_5_15Post1 | R::V0_5_16 => (A::Unlabelled, S::Unlabelled),
            _ => (A::Labelled, S::Labelled),
        };
        assert_eq!((l.allocating, l.small_host), (alloc, small), "{r}");
        assert_eq!(l.headroom_line, r >= R::V0_5_21, "{r}");
        assert_eq!(l.auto_size_line, r >= R::V0_5_21, "{r}");
        let register = if r >= R::V0_5_19 {
            H::Chunked
        } else {
            H::SingleCall
        };
        assert_eq!(l.register, register, "{r}");
        assert_eq!(l.mamba_allocating_slots, r >= R::V0_5_23, "{r}");
    }
    for v in V::ALL {
        let s = Sglang::WhatIf(v);
        assert_eq!(s.release_rules().log, s.release().rules().log, "{v:?}");
    }
}

/// A DSA model's index-K layers and the draft cell along the chain; what-ifs take the
/// pools of their nearest release.
#[test]
fn dsa_index_k_and_draft_cell_along_the_chain() {
    use Release as R;
    let k = |r: R| r.rules().pools.dsa_index_k;
    let d = |r: R| r.rules().pools.draft_cell;
    for r in [R::V0_5_14, R::V0_5_15, R::V0_5_16, R::V0_5_17] {
        assert_eq!(k(r), DsaIndexK::AllLayers, "{r}");
        assert_eq!(d(r), DraftCell::Scale, "{r}");
    }
    for r in [R::V0_5_18, R::V0_5_19, R::V0_5_20, R::V0_5_21] {
        assert_eq!(k(r), DsaIndexK::ElideUnlessHicacheOrPd, "{r}");
        assert_eq!(d(r), DraftCell::DsaAddPerLayer, "{r}");
    }
    for r in [R::V0_5_22, R::V0_5_23] {
        assert_eq!(k(r), DsaIndexK::ElideOwned, "{r}");
        assert_eq!(d(r), DraftCell::AddPerLayer, "{r}");
    }
    // `_profile_available_bytes` reserves a multimodal model's 100 MiB embedding cache
    // from 0.5.18 on (`mm_runtime_reservation_gb`).
    let mm = |r: R| r.rules().pools.mm_reservation;
    for r in [R::V0_5_14, R::V0_5_15, R::V0_5_16, R::V0_5_17] {
        assert_eq!(mm(r), MmReservation::None, "{r}");
        assert_eq!(mm(r).gib(true), 0.0);
    }
    for r in [
        R::V0_5_18,
        R::V0_5_19,
        R::V0_5_20,
        R::V0_5_21,
        R::V0_5_22,
        R::V0_5_23,
    ] {
        assert_eq!(mm(r), MmReservation::VlmCache100Mib, "{r}");
        assert_eq!(mm(r).gib(true), 100.0 / 1024.0);
        assert_eq!(mm(r).gib(false), 0.0);
    }
    let w = |v: V| Sglang::WhatIf(v).release_rules().pools.dsa_index_k;
    assert_eq!(w(V::Pre28614), DsaIndexK::AllLayers);
    assert_eq!(w(V::Pr35540), DsaIndexK::ElideUnlessHicacheOrPd);
    assert_eq!(w(V::Pr40135), DsaIndexK::ElideUnlessHicacheOrPd);
    assert_eq!(
        w(V::Pr40135WholeHeadroom),
        DsaIndexK::ElideUnlessHicacheOrPd
    );
    assert_eq!(w(V::PageCacheCredit), DsaIndexK::ElideOwned);
    assert_eq!(w(V::AutoHicache), DsaIndexK::ElideOwned);
}
