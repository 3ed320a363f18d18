//! The open-weight families' counters: each family's vocabulary from the `tiktoken` crate,
//! which counts the text exactly (each vocabulary is built once per process, on first use), and
//! the framing of the family's published chat template in place of OpenAI's overheads.

use super::TokenCounter;

/// An open-weight family's counter: its vocabulary from the `tiktoken` crate, which counts the
/// text exactly (the crate builds each vocabulary once per process, on first use), and its chat
/// template's framing counted in that vocabulary, each special token of the framing as one.
pub(crate) struct OpenWeight {
    bpe: &'static tiktoken::CoreBpe,
    /// Tokens each message costs beyond its fields.
    message: usize,
    /// Tokens each tool call (and its result) costs beyond its name, arguments and call id.
    call: usize,
    /// Tokens that start the conversation and prime the reply.
    priming: usize,
}

impl OpenWeight {
    /// Builds the counter of `template`'s vocabulary (tens of milliseconds, once per process:
    /// use [`Tokenizer::counter`]).
    pub(crate) fn new(template: &Template) -> Self {
        let bpe = tiktoken::get_encoding(template.encoding)
            .expect("every template's vocabulary is compiled in (Cargo.toml features)");
        let framing = |text: &str| bpe.count_with_special_tokens(text);
        Self {
            bpe,
            message: framing(template.message),
            call: framing(template.call),
            priming: framing(template.priming),
        }
    }
}

impl TokenCounter for OpenWeight {
    fn count_text(&self, text: &str) -> usize {
        self.bpe.count(text)
    }

    fn message_overhead(&self) -> usize {
        self.message
    }

    fn call_overhead(&self) -> usize {
        self.call
    }

    fn reply_priming(&self) -> usize {
        self.priming
    }
}

/// What an open-weight family's published chat template adds around the text the recipe counts
/// (role, content, tool names, arguments and call ids, each as text). Each field is the
/// template's framing with that text left out, so that its count is the framing's own tokens.
/// Where a template renders a role as a special token instead of text, the role's text (one
/// token) stands for it. Default system prompts that some templates insert when a conversation
/// has none are not counted. Keep in sync with the templates cited in `source` (and in the
/// catalog's `template` field of the models each counts).
pub(crate) struct Template {
    /// The `tiktoken` crate's name of the vocabulary.
    pub(crate) encoding: &'static str,
    /// The models whose text it counts exactly.
    pub(crate) models: &'static str,
    /// Where the template was published.
    pub(crate) source: &'static str,
    /// Around each message.
    pub(crate) message: &'static str,
    /// Around each tool call and its result.
    pub(crate) call: &'static str,
    /// Once per conversation: its start, and the header that primes the reply.
    pub(crate) priming: &'static str,
}

/// Llama 3.1's template: `<|start_header_id|>{role}<|end_header_id|>\n\n{content}<|eot_id|>`; a
/// tool call is the assistant's content `{"name": …, "parameters": …}`, its result an `ipython`
/// message.
pub(crate) const LLAMA3: Template = Template {
    encoding: "llama3",
    models: "Llama 3, 3.1, 3.2, 3.3",
    source: "chat_template of huggingface.co/meta-llama/Llama-3.1-8B-Instruct, tokenizer_config.json",
    message: "<|start_header_id|><|end_header_id|>\n\n<|eot_id|>",
    call: "{\"name\": \"\", \"parameters\": }",
    priming: "<|begin_of_text|><|start_header_id|>assistant<|end_header_id|>\n\n",
};

/// Qwen 2.5's template (`ChatML`): `<|im_start|>{role}\n{content}<|im_end|>\n`; a tool call is
/// `<tool_call>` JSON in the assistant's content, its result a `<tool_response>` in a user turn.
pub(crate) const QWEN2: Template = Template {
    encoding: "qwen2",
    models: "Qwen 2.5, Qwen 3, QwQ",
    source: "chat_template of huggingface.co/Qwen/Qwen2.5-7B-Instruct, tokenizer_config.json",
    message: "<|im_start|>\n<|im_end|>\n",
    call: "\n<tool_call>\n{\"name\": \"\", \"arguments\": }\n</tool_call>\
           <tool_response>\n\n</tool_response>",
    priming: "<|im_start|>assistant\n",
};

/// `DeepSeek` V3's template: `<｜User｜>{content}`, `<｜Assistant｜>{content}<｜end▁of▁sentence｜>`
/// (the end marker is counted on every message, erring on the side of counting more); tool
/// calls and outputs in their own marker blocks, arguments in a fenced JSON block.
pub(crate) const DEEPSEEK_V3: Template = Template {
    encoding: "deepseek_v3",
    models: "DeepSeek V3, V3.1, R1 and the deepseek-chat / deepseek-reasoner API",
    source: "chat_template of huggingface.co/deepseek-ai/DeepSeek-V3, tokenizer_config.json",
    message: "<｜end▁of▁sentence｜>",
    call: "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>\n```json\n\n```\
           <｜tool▁call▁end｜><｜tool▁calls▁end｜><｜tool▁outputs▁begin｜><｜tool▁output▁begin｜>\
           <｜tool▁output▁end｜><｜tool▁outputs▁end｜>",
    priming: "<｜begin▁of▁sentence｜><｜Assistant｜>",
};

/// Mistral's Tekken template: `[INST]{user}[/INST]{assistant}</s>` (roles are not text: the
/// role's text stands for the closing marker); tool calls as `[TOOL_CALLS]` JSON, results as
/// `[TOOL_RESULTS]` JSON.
pub(crate) const TEKKEN: Template = Template {
    encoding: "mistral_v3",
    models: "Mistral models with the Tekken tokenizer (Nemo, Small 3, Large 3, Devstral, \
             Magistral, Ministral)",
    source: "chat_template of huggingface.co/mistralai/Mistral-Nemo-Instruct-2407, \
             tokenizer_config.json",
    message: "[INST][/INST]",
    call: "[TOOL_CALLS][{\"name\": \"\", \"arguments\": , \"id\": \"\"}]\
           [TOOL_RESULTS]{\"content\": , \"call_id\": \"\"}[/TOOL_RESULTS]",
    priming: "<s>",
};

/// Kimi K2's template: `<|im_user|>{role}<|im_middle|>{content}<|im_end|>`; tool calls in a
/// `<|tool_calls_section_begin|>` block as `functions.{name}:{index}`, results as
/// `## Return of {id}`.
pub(crate) const KIMI_K2: Template = Template {
    encoding: "kimi_k2",
    models: "Kimi K2",
    source: "huggingface.co/moonshotai/Kimi-K2-Instruct, chat_template.jinja",
    message: "<|im_user|><|im_middle|><|im_end|>",
    call: "<|tool_calls_section_begin|><|tool_call_begin|>functions.:0\
           <|tool_call_argument_begin|><|tool_call_end|><|tool_calls_section_end|>## Return of \n",
    priming: "<|im_assistant|>assistant<|im_middle|>",
};

/// GLM-4.6's template: `[gMASK]<sop>`, then `<|{role}|>\n{content}` (the role's text stands for
/// its marker); a tool call is `<tool_call>{name}` with `<arg_key>` / `<arg_value>` pairs (the
/// arguments' JSON text stands for them), its result an `<|observation|>` `<tool_response>`.
pub(crate) const GLM4: Template = Template {
    encoding: "glm4",
    models: "GLM-4.5, 4.6, 4.7",
    source: "huggingface.co/zai-org/GLM-4.6, chat_template.jinja",
    message: "\n",
    call: "\n<tool_call>\n</tool_call><|observation|>\n<tool_response>\n\n</tool_response>",
    priming: "[gMASK]<sop><|assistant|>",
};

/// `MiniMax` M2's template: `]~!b[` once, then `]~b]{role}\n{content}[e~[\n`; a tool call is a
/// `<minimax:tool_call>` block of `<invoke name=…>` with `<parameter>` elements, its result a
/// `<response>`.
pub(crate) const MINIMAX_M2: Template = Template {
    encoding: "minimax_m2",
    models: "MiniMax M2, M2.1, M2.5",
    source: "huggingface.co/MiniMaxAI/MiniMax-M2, chat_template.jinja",
    message: "]~b]\n[e~[\n",
    call: "<minimax:tool_call>\n<invoke name=\"\">\n</invoke>\n</minimax:tool_call>\
           <response></response>\n",
    priming: "]~!b[]~b]ai\n<think>\n",
};
