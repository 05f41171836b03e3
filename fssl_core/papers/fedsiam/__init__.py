"""FedSiam (Long et al., CIKM'21): Tables 5-8 and Figures 5-6 (README.md). The paper's cells are in
cells.py, the authors' computations and their code's logs in authors_code.py, the claims in claims.py,
the causes of the cells far from the paper in causes.py, the printed numbers in values.csv."""
from .authors_code import (AUTHORS_CODE_SCRIPTS, AUTHORS_CODE_SETTINGS, AUTHORS_FIXMATCH, AUTHORS_FIXMATCH_ROWS,
                           AUTHORS_NETWORK, AUTHORS_NETWORK_ROWS, AUTHORS_NETWORK_SCOPE, AUTHORS_SERVER_SCRIPTS,
                           AUTHORS_SIAMESE, AUTHORS_SIAMESE_SCOPE, AUTHORS_SIAMESE_TABLE7, AUTHORS_SIAMESE_TABLE8,
                           AUTHORS_SUPERVISED_OPTIMISER, OTHER_RATIO_COLUMNS, SUPERVISED_BASELINES,
                           TABLE6_SERVER_ALONE, TABLE6_SERVER_STEP, authors_code_results, authors_fixmatch_cells,
                           authors_network_cells, authors_optimiser_cells, authors_server_code_results,
                           authors_siamese_cells, table6_server_alone_cells, table6_server_step_cells,
                           table7_authors_siamese_cells, table8_authors_siamese_cells, unlabeled_gain)
from .causes import (AUTHORS_CODE, DELTA_REASONS, EXPLORATORY, NONE_MEASURED, PRE_REGISTERED, RULE_COMMIT,
                     SERVER_WHOLE_COMPUTATION, TOO_FEW_RUNS, UNEXPLAINED, WHOLE_COMPUTATION, DeltaReason,
                     alpha_reached, as_test_selected, cause_reading, client_steps_per_round, explain_large_deltas,
                     explain_published, exploratory_within, first_commits, is_cause, likely_reasons,
                     measured_beside, measured_cause, prospective, provenance, seed_interval)
from . import plans
from .plans import NOTEBOOK_PLANS
from .cells import (ABLATION_SEEDS, CLIENT_PROTOCOL, DATASETS, FIGURE5_METHODS, FIGURE5_SETTINGS, FIGURE6_MUS, FOLDER,
                    HEADLINE_METHODS, HEADLINE_SCOPE, LABELED_REPEATS, METHOD_SETTINGS, METHODS, NONIID3_REPEATS,
                    PAPER, QUICK, SEEDS, SERVER_PROTOCOL, SERVER_ROUNDS, SMOKE_SCOPE, TABLE5_DATASETS,
                    TABLE5_LABELED_RATIOS, TABLE5_METHODS, TABLE5_SETTINGS, TABLE6_LABELED_RATIOS, TABLE6_METHODS,
                    TABLE6_SETTINGS, fedsiam_settings, figure5_cells, figure6_cells, paper_config,
                    paper_protocol_scope, protocol, table5_cells, table5_columns, table6_cells, table6_columns,
                    table7_cells, table7_variants, table8_cells)
from .claims import (BASELINES, CLAIM_SOURCES, TAU_READING, fedsiam_d_vs_authors_baselines,
                     group_margins, rankings, table5_claims, table6_claims, table7_claims, table8_claims)

# The paper's names for its methods (values.csv's ids, papers/README.md), short enough to stay legible as
# rotated tick labels; the markdown prints FedSiam-Π as "FedSiam-II".
# The table figures (notebook = figure name -> (title, its main table's id)): drawn from the notebook's published rows by
# paper_vs_reproduced when reproduce publishes them (papers.redraw_table_figure), never from one run's slice
TABLE_FIGURES = {f"fedsiam_table{i}": (f"FedSiam Table {i}", f"table{i}") for i in (5, 6, 7, 8)}
DISPLAY_NAMES = {
    "fedavg": "FedAvg", "fedavg_plus": "FedAvg+", "fedsem": "FedSem", "fedfixmatch": "FedFixMatch",
    "fedmatch": "FedMatch", "fedsiam_pi": "FedSiam-Π", "fedsiam_mt": "FedSiam-MT", "fedsiam_d": "FedSiam-D",
    "fedsiam_nosiam": "FedSiam-NoSiam", "fedsiam_d_mse": "FedSiam-D (MSE)", "fedsiam_d_kl": "FedSiam-D (KL)",
    "fedsiam": "FedSiam",          # the paper itself (the README's sentence a paper: report.page.at_a_glance)
}
# The README's summary counts, of the published cells beyond report.WITHIN_POINTS, those with a cause under
# the pre-registered rule (causes.PRE_REGISTERED, plus our seeds' spread from three seeds)
FAR_CELL_CAUSES = {PAPER: explain_published}
# The sentence introducing each of the paper's tables in results/REPORT.md (papers.table_intros)
_EXPLORATORY = ("Exploratory: never counted as a cause (only the pre-registered reading is, causes.PRE_REGISTERED); "
                "shown so a reader can see which part of the authors' computation moves a cell.")
TABLE_INTROS = {(PAPER, table): text for table, text in {
    "table5": "Table 5 (labels at the clients): every printed cell beside ours, mean ± std over the seeds run.",
    "table5_claims": "The claims Table 5 supports, tested on its cells (the claims rule is in the summary above).",
    "table5_authors_optimiser": "Table 5's supervised baselines (FedAvg, FedAvg+, FedSem) with the authors' optimiser "
                                "(their code's momentum and no weight decay) instead of Table 2's shared one. "
                                + _EXPLORATORY,
    "table5_authors_fixmatch": "Table 5's FedFixMatch and FedMatch rows as the authors' code computes them (one "
                               "FedFixMatch configuration serves both). " + _EXPLORATORY,
    "table5_authors_network": "Table 5's rows with the authors' MNIST network and the rest of their computation; its "
                              "test-selected value is the pre-registered reading for the supervised and FixMatch rows. "
                              "The other columns are exploratory.",
    "table5_authors_siamese": "Table 5's siamese rows as the authors' code computes them (their network, unaugmented "
                              "inputs, EMA on epochs); its test-selected value is the pre-registered reading for those "
                              "rows. The other columns are exploratory.",
    "table5_authors_code": "The authors' own code rerun (their repository, their logs in results/authors_code/): last "
                           "round and the round of lowest test loss they keep. Provenance (where a printed value comes "
                           "from), not a cause of our gap; no paper value of its own.",
    "table6": "Table 6 (labels at the server): every printed cell beside ours.",
    "table6_claims": "The claim Table 6 supports (the siamese methods above the FixMatch-based ones), tested on its cells.",
    "table6_authors_code": "The authors' labels-at-server code rerun: provenance, not a cause.",
    "table6_server_alone": "Each Table 6 column's server alone as the authors' labels-at-server code trains it (their "
                           "clients never train), shown in every method's row: the pre-registered reading there.",
    "table6_server_step": "Each Table 6 column's server step alone under our protocol: what the clients add to it is "
                          "the method's own contribution. Exploratory.",
    "table7": "Table 7's ablations (siamese network, α_max, τ curve) beside ours.",
    "table7_claims": "The claims Table 7 supports, tested on its rows.",
    "table7_authors_siamese": "Table 7's MNIST rows as the authors' code computes them. " + _EXPLORATORY,
    "table8": "Table 8 (the consistency loss, MSE or KL) beside ours.",
    "table8_claims": "The claim Table 8 supports, tested on its rows.",
    "table8_authors_siamese": "Table 8's MNIST rows as the authors' code computes them. " + _EXPLORATORY,
    "figure6": "Figure 6: accuracy against μ, the target reduction of uploads (values read off the figure).",
}.items()}
