"""What SGLang's resolution entry reads of the machine, the model and the hub that the
sglang world does not answer, for Llama-3.1-8B-Instruct on one GPU: a matrix's
`fields:` and `bindings:` sections (docs/matrix-files.md), for the bench and the
real-release tests. Facts about SGLang's names, written here."""

LLAMA_ONE_GPU = """\
fields:
  model_config.num_kv_heads: 8
  hf_config.model_type: llama
  SGLANG_ENABLE_SPEC_V2: null
  SGLANG_ENABLE_EPLB_BALANCEDNESS_METRIC: null
  NCCL_GRAPH_REGISTER: null
  platform.cuda_version: "12.9"
  random_seed: 42
  model_path: meta-llama/Llama-3.1-8B-Instruct
  architecture: LlamaForCausalLM
  use_mla: false
bindings:
  configure_media_url_security: {call: []}
  resolve_hf_gguf_reference: {call: null}
  is_runai_obj_uri: {call: false}
  parse_connector_type: {call: ""}
  ConnectorType: {object: {INSTANCE: instance}}
  get_config: {call: {object: {architectures: [LlamaForCausalLM], model_type: llama}}}
  is_deepseek_dsa: {call: false}
  is_deepseek_v4: {call: false}
  is_minimax_sparse: {call: false}
  has_fp8_weights_in_checkpoint: {call: false}
  check_gguf_file: {call: false}
  uses_kda_attention: {call: false}
  supports_prefill_cp_bcg: {call: false}
  is_remote_url: {call: false}
  get_linear_attn_spec: {call: null}
  get_linear_attn_spec_by_arch: {call: null}
  init_cp_strategy: {call: null}
  handle_amd_monokernel: {call: null}
  handle_nvidia_megakernel: {call: null}
  get_device_memory_capacity: {call: 81559}
  deep_gemm_wrapper: {object: {DEEPGEMM_SCALE_UE8M0: false, ENABLE_JIT_DEEPGEMM: false}}
"""
