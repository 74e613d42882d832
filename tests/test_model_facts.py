"""What the sglang world answers of the model when the matrix does not say: the facts
docs/matrix-files.md documents, a text-only decoder model (no vision or audio tower,
no encoder, no embedding or reward head, no nested language config), for the
architectures it knows are such models; a field wins. Another architecture's facts,
and what it documents no default for (`hf_config.model_type`), are the matrix's to
give: refused where read, naming the field."""

from __future__ import annotations

import json

from harness.matrix.load import load_matrix
from harness.testing.gitrepo import FixtureRepo
from tests.conftest import run_cli
from tests.helpers import PATH, evaluate_at, module

FACTS = """\
@register_post_process
def _model_facts(view):
    model = model_config_of(view)
    hf = model.hf_config
    text_only = not (model.is_multimodal or model.is_encoder_decoder
                     or model.is_embedding_gemma
                     or model.is_multimodal_piecewise_cuda_graph_supported)
    heads = (model.pointer_head, model.joint_head_config, model.embedding_model_spec,
             model.decision_config, hf.text_config, hf.llm_config, hf.language_config)
    return {"kind": f"{hf.architectures[0]}|{text_only}|{heads == (None,) * 7}"}
"""
ARCHITECTURES = ("LlamaForCausalLM", "DeepseekV3ForCausalLM", "Qwen3MoeForCausalLM")
MATRIX = f"""\
name: facts
target:
  path: {PATH}
  function: _model_facts
  output: kind
world: sglang
axes:
  architecture: [LlamaForCausalLM, DeepseekV3ForCausalLM, Qwen3MoeForCausalLM]
"""


def commit(tmp_path, matrix_text: str = MATRIX, facts: str = FACTS) -> tuple:
    sha = FixtureRepo(tmp_path / "repo").commit("facts", {PATH: module(facts)})
    matrix = tmp_path / "m.yaml"
    matrix.write_text(matrix_text)
    return tmp_path / "repo", sha, matrix


def test_a_models_facts_default_to_a_text_only_decoder(tmp_path):
    root, sha, matrix = commit(tmp_path)
    loaded = load_matrix(str(matrix))
    table = evaluate_at(root, sha, loaded).table
    found = [table.outcome_at(i).value for i in range(loaded.size)]
    assert found == [f"{arch}|True|True" for arch in ARCHITECTURES]


def test_a_field_wins_over_the_default(tmp_path):
    text = MATRIX + "fields:\n  model_config.is_multimodal: true\n  hf_config.llm_config: nested\n"
    root, sha, matrix = commit(tmp_path, text)
    loaded = load_matrix(str(matrix))
    table = evaluate_at(root, sha, loaded).table
    found = [table.outcome_at(i).value for i in range(loaded.size)]
    assert found == [f"{arch}|False|False" for arch in ARCHITECTURES]


def test_the_model_type_is_the_matrixs_to_give(tmp_path):
    root, sha, matrix = commit(tmp_path, facts=FACTS.replace("architectures[0]", "model_type"))
    done = run_cli("diff", sha, sha, "--repo", str(root), "--matrix", str(matrix),
                   "--format", "json", "--no-cache")  # fmt: skip
    assert done.code == 4, done.out
    note = json.loads(done.out)["notes"]["base"]
    assert "hf_config.model_type" in note and "fields:" in note, note


def test_another_architectures_facts_are_the_matrixs_to_give(tmp_path):
    llava = MATRIX.replace("Qwen3MoeForCausalLM", "LlavaForConditionalGeneration")
    root, sha, matrix = commit(tmp_path, llava)
    done = run_cli("diff", sha, sha, "--repo", str(root), "--matrix", str(matrix),
                   "--format", "json", "--no-cache")  # fmt: skip
    assert done.code == 4, done.out
    note = json.loads(done.out)["notes"]["base"]
    assert "model_config.is_multimodal" in note and "text-only decoder" in note, note
    given = "".join(f"  model_config.{f}: false\n" for f in (
        "is_multimodal", "is_encoder_decoder", "is_embedding_gemma",
        "is_multimodal_piecewise_cuda_graph_supported"))  # fmt: skip
    given += "".join(f"  {f}: null\n" for f in (
        "model_config.pointer_head", "model_config.joint_head_config",
        "model_config.embedding_model_spec", "model_config.decision_config",
        "hf_config.text_config", "hf_config.llm_config", "hf_config.language_config"))  # fmt: skip
    root, sha, matrix = commit(tmp_path / "given", llava + "fields:\n" + given)
    loaded = load_matrix(str(matrix))
    table = evaluate_at(root, sha, loaded).table
    assert table.outcome_at(2).value == "LlavaForConditionalGeneration|True|True"
