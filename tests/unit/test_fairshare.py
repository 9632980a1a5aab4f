"""The hierarchical water-fill (volsched.model.fairshare) as plain data: trees of queues in, shares out."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest

from volsched.model.fairshare import FairShare, build_tree, fair_share, water_fill

INT32_MAX = 2**31 - 1
INF = np.inf


@dataclass
class Q:
    """One queue of a test tree: cpu only unless a vector is given."""

    name: str
    parent: str | None = None
    weight: float = 1
    guarantee: float = 0.0
    capability: float = INF
    request: float = 0.0
    allocated: float = 0.0
    unit: float = 0.0
    extra: dict[str, float] = field(default_factory=dict)


def share(total: float, *queues: Q) -> tuple[FairShare, dict[str, int]]:
    tree = build_tree([q.name for q in queues], [q.parent for q in queues])

    def col(attr: str) -> np.ndarray:
        return np.array([[float(getattr(q, attr))] for q in queues]).reshape(len(queues), 1)

    fs = fair_share(
        tree,
        total=np.array([float(total)]),
        weight=np.array([float(q.weight) for q in queues]),
        guarantee=col("guarantee"),
        capability=col("capability"),
        request=col("request"),
        allocated=col("allocated"),
        unit=col("unit"),
        dims=["cpu"],
    )
    return fs, {q.name: i for i, q in enumerate(queues)}


def cpu(fs: FairShare, row: dict[str, int], what: str = "deserved") -> dict[str, float]:
    values = getattr(fs, what)
    return {name: round(float(values[i][0]), 3) for name, i in row.items()}


def reasons(fs: FairShare) -> list[tuple[str, str]]:
    return [(p.queue, p.reason) for p in fs.problems]


@pytest.mark.parametrize(
    ("queues", "total", "expected"),
    [
        pytest.param([Q("a", request=30), Q("b", request=30)], 16, {"a": 8, "b": 8}, id="equal-weights"),
        pytest.param(
            [Q("a", weight=1, request=30), Q("b", weight=3, request=30)],
            16,
            {"a": 4, "b": 12},
            id="weights-1-3",
        ),
        pytest.param(
            [Q("a", request=2), Q("b", request=30), Q("c", request=30)],
            16,
            {"a": 2, "b": 7, "c": 7},
            id="capped-by-request-rest-shared",
        ),
        pytest.param(
            [Q("a", capability=3, request=10), Q("b", request=20)],
            16,
            {"a": 3, "b": 13},
            id="capped-by-capability",
        ),
        pytest.param(
            [Q("a", guarantee=4), Q("b", request=20)], 16, {"a": 4, "b": 12}, id="guarantee-floor-no-demand"
        ),
        pytest.param([Q("a"), Q("b", request=30)], 16, {"a": 0, "b": 16}, id="idle-queue-deserves-nothing"),
    ],
)
def test_flat_water_fill(queues, total, expected):
    fs, row = share(total, *queues)
    assert cpu(fs, row) == expected


@pytest.mark.parametrize("weight", [1, 2, 3, 1000, 2**20, 2**30, INT32_MAX])
def test_an_idle_queue_of_any_weight_leaves_everything_to_the_busy_ones(weight):
    """Defect 6 of issue 8: a huge weight on an idle queue ended the fill after one round."""
    fs, row = share(10, Q("idle", weight=weight), Q("a", request=30), Q("b", weight=3, request=30))
    assert cpu(fs, row) == {"idle": 0, "a": 2.5, "b": 7.5}


@pytest.mark.parametrize("weight", [1, 7, 2**16, 2**31 - 2, INT32_MAX])
def test_weights_up_to_the_int32_maximum_share_exactly(weight):
    fs, row = share(12, Q("big", weight=weight, request=100), Q("small", weight=1, request=100))
    d = cpu(fs, row)
    assert d["big"] + d["small"] == 12
    assert d["big"] == pytest.approx(12 * weight / (weight + 1), abs=1e-3)


def test_water_fill_is_exact_for_extreme_weights_and_caps():
    out = water_fill(
        np.array([100.0]),
        np.array([1.0, float(INT32_MAX), 5.0]),
        np.zeros((3, 1)),
        np.array([[INF], [3.0], [INF]]),
    )
    assert out[:, 0].tolist() == pytest.approx([97 / 6, 3.0, 97 * 5 / 6])


@pytest.mark.filterwarnings("error::RuntimeWarning")
@pytest.mark.parametrize(
    ("queues", "expected"),
    [
        pytest.param(
            [Q("a", weight=0, request=30), Q("b", weight=0, request=30)], {"a": 0, "b": 0}, id="all-zero"
        ),
        pytest.param(
            [Q("a", weight=0, request=30, guarantee=4), Q("b", weight=0, request=30)],
            {"a": 4, "b": 0},
            id="all-zero-guarantee-kept",
        ),
        pytest.param(
            [Q("a", weight=0, request=30), Q("b", request=30)], {"a": 0, "b": 16}, id="zero-beside-one"
        ),
        pytest.param(
            [Q("a", weight=0, request=30, guarantee=4), Q("b", request=30)],
            {"a": 4, "b": 12},
            id="zero-with-guarantee-beside-one",
        ),
        pytest.param(
            [Q("p", weight=0), Q("a", parent="p", request=30), Q("b", weight=2, request=30)],
            {"p": 0, "a": 0, "b": 16},
            id="zero-weight-parent",
        ),
    ],
)
def test_a_queue_of_weight_zero_deserves_its_guarantee_only(queues, expected):
    """As Volcano's proportion: weight 0 takes no part of the weighted fill (all of them 0 gave NaN
    shares and RuntimeWarnings); the queues of positive weight share the rest as before."""
    fs, row = share(16, *queues)
    assert cpu(fs, row) == expected
    assert np.isfinite(fs.limit).all()


def test_three_equal_queues_on_ten_cpu_place_all_ten():
    """Issue 13: each deserves 3.33 but 1-cpu pods fill only 3; the tenth cpu goes to one queue."""
    fs, row = share(10, *(Q(n, request=7, unit=1) for n in ("a", "b", "c")))
    assert cpu(fs, row) == {"a": 3.333, "b": 3.333, "c": 3.333}
    limits = cpu(fs, row, "limit")
    assert sorted(limits.values()) == [3.333, 3.333, 4]
    assert limits["a"] == 4  # ties go by name
    # Next session, with a holding 4 and b, c 3: nothing more to hand out (steady state).
    fs, row = share(
        10, Q("a", request=7, allocated=4, unit=1), *(Q(n, request=7, allocated=3, unit=1) for n in "bc")
    )
    assert cpu(fs, row, "limit") == {"a": 4, "b": 3.333, "c": 3.333}


def test_the_remainder_goes_to_the_lowest_share_first():
    # a's 2-cpu pods fill only 2 of its 3.33 (share 0.6), b's 1-cpu pods 6 of 6.67 (0.9): the spare
    # 2 cpu go to a, the lower share.
    fs, row = share(10, Q("a", request=9, unit=2), Q("b", weight=2, request=9, unit=1))
    assert cpu(fs, row) == {"a": 3.333, "b": 6.667}
    assert cpu(fs, row, "limit") == {"a": 4, "b": 6.667}
    # The other way round, b is lower (b's 2-cpu pods fill 6 of 6.67: 0.9 vs a's 1-cpu 3 of 3.33: 0.9,
    # tie by name) -> make b's pods 4 cpu: b fills 4 of 6.67 (0.6), a 3 of 3.33; 3 spare: b's 4 do not
    # fit, so a takes the spare units it can use.
    fs, row = share(10, Q("a", request=9, unit=1), Q("b", weight=2, request=9, unit=4))
    assert cpu(fs, row, "limit") == {"a": 6, "b": 6.667}


def test_an_unused_guarantee_stays_reserved_and_is_not_handed_out():
    fs, row = share(10, Q("g", guarantee=4), Q("a", request=9, unit=1), Q("b", request=9, unit=1))
    assert cpu(fs, row) == {"g": 4, "a": 3, "b": 3}
    assert cpu(fs, row, "limit") == {"g": 4, "a": 3, "b": 3}


def test_no_remainder_past_a_realcapability():
    fs, row = share(10, *(Q(n, request=7, unit=1, capability=3.5) for n in "abc"))
    assert cpu(fs, row, "limit") == {"a": 3.333, "b": 3.333, "c": 3.333}


def test_the_slides_tree_services_and_bigdata_with_hadoop_and_spark():
    tree = [
        Q("services"),
        Q("bigdata"),
        Q("hadoop", parent="bigdata"),
        Q("spark", parent="bigdata", weight=1),
    ]

    def phase(services: float, hadoop: float, spark: float) -> dict[str, float]:
        reqs = {"services": services, "hadoop": hadoop, "spark": spark}
        qs = [Q(q.name, parent=q.parent, weight=q.weight, request=reqs.get(q.name, 0)) for q in tree]
        fs, row = share(100, *qs)
        return cpu(fs, row)

    # Services idle: big data borrows everything, Hadoop and Spark share it.
    assert phase(0, 80, 80) == {"services": 0, "bigdata": 100, "hadoop": 50, "spark": 50}
    # Services busy: 50/50 between areas; inside big data 25/25.
    assert phase(80, 80, 80) == {"services": 50, "bigdata": 50, "hadoop": 25, "spark": 25}
    # Spark idle: Hadoop borrows Spark's part first (siblings), services keep their 50.
    assert phase(80, 80, 0) == {"services": 50, "bigdata": 50, "hadoop": 50, "spark": 0}
    # Big data asks little: the rest is lent up the tree to services.
    assert phase(80, 10, 5) == {"services": 80, "bigdata": 15, "hadoop": 10, "spark": 5}


def test_a_parent_capability_caps_its_whole_subtree():
    fs, row = share(
        100,
        Q("p", capability=30),
        Q("a", parent="p", request=50),
        Q("b", parent="p", request=50),
        Q("c", request=90),
    )
    assert cpu(fs, row) == {"p": 30, "a": 15, "b": 15, "c": 70}
    assert cpu(fs, row, "real_capability")["a"] == 30


def test_guarantees_inside_a_tree_reserve_up_the_tree():
    fs, row = share(100, Q("p"), Q("a", parent="p", guarantee=20), Q("c", request=200))
    assert cpu(fs, row) == {"p": 20, "a": 20, "c": 80}
    assert cpu(fs, row, "real_capability")["c"] == 80


@pytest.mark.parametrize(
    ("queues", "expected_real", "expected_problems"),
    [
        pytest.param(
            [Q("greedy", guarantee=1000), Q("a", request=50), Q("b", request=50)],
            {"greedy": 16, "a": 10.667, "b": 10.667},
            [("greedy", "GuaranteeNotMet")],
            id="guarantee-larger-than-the-cluster",
        ),
        pytest.param(
            [Q("g1", guarantee=12), Q("g2", guarantee=12), Q("a", request=50)],
            {"g1": 10.667, "g2": 10.667, "a": 5.333},
            [("g1", "GuaranteeNotMet"), ("g2", "GuaranteeNotMet")],
            id="guarantees-summing-past-the-cluster",
        ),
        pytest.param(
            [Q("g", guarantee=8, capability=4), Q("a", request=50)],
            {"g": 4, "a": 12},
            [("g", "GuaranteeAboveCapability")],
            id="guarantee-above-its-own-capability",
        ),
    ],
)
def test_impossible_guarantees_are_reported_and_cut_so_others_keep_working(
    queues, expected_real, expected_problems
):
    """Defect 7 of issue 8: an impossible guarantee drove the other queues' realCapability to 0."""
    fs, row = share(16, *queues)
    assert cpu(fs, row, "real_capability") == expected_real
    assert reasons(fs) == expected_problems
    for q in ("a", "b"):
        if q in row:
            assert fs.deserved[row[q]][0] > 0
    assert fs.deserved.sum() <= 16 + 1e-6
    assert all("missing cpu" in p.message for p in fs.problems if p.reason == "GuaranteeNotMet")


def test_children_guaranteeing_more_than_their_parent_are_reported_on_both():
    fs, row = share(
        100,
        Q("p", guarantee=10),
        Q("a", parent="p", guarantee=10),
        Q("b", parent="p", guarantee=10, weight=3),
    )
    assert ("p", "ChildGuaranteesExceed") in reasons(fs)
    assert ("a", "GuaranteeNotMet") in reasons(fs)
    g = cpu(fs, row, "guarantee")
    assert g["p"] == 10 and g["a"] + g["b"] == pytest.approx(10, abs=1e-3) and g["a"] == 2.5


@pytest.mark.parametrize(
    ("names", "parents", "problems", "top"),
    [
        pytest.param(
            ["a", "b"], ["nowhere", None], [("a", "ParentNotFound")], ["a", "b"], id="missing-parent"
        ),
        pytest.param(
            ["a", "b"], ["b", "a"], [("a", "ParentCycle"), ("b", "ParentCycle")], ["a", "b"], id="cycle"
        ),
        pytest.param(["a"], ["a"], [("a", "ParentCycle")], ["a"], id="own-parent"),
        pytest.param(["a", "b", "c"], ["root", "a", "b"], [], ["a"], id="chain-is-fine"),
    ],
)
def test_bad_parents_are_reported_and_the_queue_goes_under_root(names, parents, problems, top):
    tree = build_tree(names, parents)
    assert [(p.queue, p.reason) for p in tree.problems] == problems
    assert [tree.names[i] for i in tree.top] == top
    fs, _ = share(10, *(Q(n, parent=p, request=5) for n, p in zip(names, parents, strict=True)))
    assert fs.deserved.sum() >= 0  # no crash


def test_namespaces_are_the_last_level_of_the_tree():
    """Case 2 of namespace-fair-share.md: namespaces are leaves of their queue."""
    qs = [
        Q("q1", weight=1),
        Q("q2", weight=3),
        Q("ns1", parent="q1", weight=3, request=5),
        Q("ns2", parent="q1", weight=1, request=10),
        Q("ns3", parent="q2", weight=2, request=10),
        Q("ns4", parent="q2", weight=6, request=2),
    ]
    fs, row = share(16, *qs)
    assert cpu(fs, row) == {"q1": 4, "q2": 12, "ns1": 3, "ns2": 1, "ns3": 10, "ns4": 2}


@pytest.mark.parametrize("seed", range(40))
def test_random_trees_keep_every_invariant(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 12))
    names = [f"q{i}" for i in range(n)]
    parents = [None if i == 0 or rng.random() < 0.4 else names[int(rng.integers(0, i))] for i in range(n)]
    total = float(rng.integers(5, 200))
    queues = [
        Q(
            names[i],
            parent=parents[i],
            weight=float(rng.choice([1, 2, 5, INT32_MAX])),
            guarantee=float(rng.choice([0, 0, 0, 3, 500])),
            capability=float(rng.choice([INF, INF, 20, 2])),
            # Jobs live in leaf queues only.
            request=0.0 if names[i] in parents else float(rng.integers(0, 60)),
            unit=1.0,
        )
        for i in range(n)
    ]
    fs, _ = share(total, *queues)
    tree = fs.tree
    top = tree.top
    assert fs.deserved[top].sum() <= total + 1e-6
    assert np.all(fs.deserved <= fs.real_capability + 1e-6)
    assert np.all(fs.guarantee <= fs.real_capability + 1e-6)
    assert fs.guarantee[top].sum() <= total + 1e-6
    leaves = [i for i in range(n) if tree.is_leaf(i)]
    # Limits hand out whole units (1 cpu here): what they let leaves fill never passes the cluster.
    usable = np.minimum(fs.limit[leaves], fs.request[leaves])
    assert np.floor(usable + 1e-6).sum() <= total + 1e-6
    for i in range(n):
        kids = tree.children[i]
        if kids:
            assert fs.deserved[kids].sum() <= fs.deserved[i].sum() + 1e-6
    placed = sum(min(float(fs.limit[i][0]), float(fs.request[i][0])) for i in leaves)
    demand_cap = min(total, sum(float(fs.request[i][0]) for i in leaves))
    if all(np.isinf(q.capability) and q.guarantee == 0 for q in queues):
        assert placed >= demand_cap - len(leaves) - 1e-6
