"""The stand-in vocabularies of :mod:`parsers.reference.mlx_lm`: the special tokens of each model family's vocabulary
(data, one tuple per family)."""

from __future__ import annotations

# Special tokens of each model family's vocabulary: all the wrapper reads of it (``_infer_thinking`` looks for
# ``<think>``/``</think>``; the text state machine matches marker text). Sources: docs/engines/mlx_lm.md.
GLM_VOCAB = (
    "<|endoftext|>",
    "[MASK]",
    "[gMASK]",
    "[sMASK]",
    "<sop>",
    "<eop>",
    "<|system|>",
    "<|user|>",
    "<|assistant|>",
    "<|observation|>",
    "<think>",
    "</think>",
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
    "<arg_key>",
    "</arg_key>",
    "<arg_value>",
    "</arg_value>",
    "/nothink",
)
#: Ling 3.0: the special tokens llama.cpp's Ling 3.0 parser preserves (common/parsers/ling3.cpp).
LING3_VOCAB = (*"<think> </think> <tool_call> </tool_call> <arg_key> </arg_key> <arg_value> </arg_value>".split(),)
LING3_VOCAB += ("<|role_end|>",)
QWEN3_VOCAB = (
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<tool_call>",
    "</tool_call>",
    "<|fim_prefix|>",
    "<|fim_middle|>",
    "<|fim_suffix|>",
    "<|fim_pad|>",
    "<|repo_name|>",
    "<|file_sep|>",
    "<tool_response>",
    "</tool_response>",
    "<think>",
    "</think>",
)
#: Muse Glimmer: the special tokens llama.cpp's Muse Glimmer parser preserves (common/parsers/muse-glimmer.cpp).
MUSE_GLIMMER_VOCAB = (*"<|start|> <|message|> <|eom|> <|eot|> <atem:function_calls> </atem:function_calls>".split(),)
MUSE_GLIMMER_VOCAB += (*"<atem:invoke </atem:invoke> <atem:parameter </atem:parameter>".split(),)
MINIMAX_VOCAB = ("]~!b[", "]~b]", "[e~[", "<think>", "</think>", "<minimax:tool_call>", "</minimax:tool_call>")
MISTRAL_VOCAB = (
    "<unk>",
    "<s>",
    "</s>",
    "[INST]",
    "[/INST]",
    "[AVAILABLE_TOOLS]",
    "[/AVAILABLE_TOOLS]",
    "[TOOL_RESULTS]",
    "[/TOOL_RESULTS]",
    "[TOOL_CALLS]",
    "[SYSTEM_PROMPT]",
    "[/SYSTEM_PROMPT]",
    "[TOOL_CONTENT]",
    "[ARGS]",
    "[CALL_ID]",
)
KIMI_K2_VOCAB = (
    "[BOS]",
    "[EOS]",
    "<|im_end|>",
    "<|im_user|>",
    "<|im_assistant|>",
    "<|start_header_id|>",
    "<|end_header_id|>",
    "[EOT]",
    "<|im_system|>",
    "<|tool_calls_section_begin|>",
    "<|tool_calls_section_end|>",
    "<|tool_call_begin|>",
    "<|tool_call_argument_begin|>",
    "<|tool_call_end|>",
    "<|im_middle|>",
    "[UNK]",
    "[PAD]",
)
# LFM2 / LFM2.5's special tokens (the markers of harness.formats.lfm2, <think>/</think>, and its turn tokens).
LFM2_VOCAB = tuple(
    "<|pad|> <|startoftext|> <|endoftext|> <|im_start|> <|im_end|> <|tool_list_start|> <|tool_list_end|> "
    "<|tool_call_start|> <|tool_call_end|> <|tool_response_start|> <|tool_response_end|> <think> </think>".split()
)
# Kimi K3: the XTML tokens mlx-lm's _is_xtml_vocab looks for (the template names none of the tool markers
# _infer_tool_parser matches, so the vocabulary picks kimi_k3; thinks in <|open|>think<|sep|> blocks).
KIMI_K3_VOCAB = ("<|open|>", "<|close|>", "<|sep|>", "<|end_of_msg|>", "<|kimi_image_placeholder|>")
FUNCTIONGEMMA_VOCAB = (
    "<pad>",
    "<eos>",
    "<bos>",
    "<unk>",
    "<start_of_turn>",
    "<end_of_turn>",
    "<start_function_declaration>",
    "<end_function_declaration>",
    "<start_function_call>",
    "<end_function_call>",
    "<start_function_response>",
    "<end_function_response>",
    "<escape>",
)
