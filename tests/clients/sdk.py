"""The official `anthropic` and `openai` Python SDKs through `ctxcompact proxy` (issue 22).

Each SDK runs a conversation that grows by one tool round per call, streaming and not, until
it is well past the proxy's window; every answer must come back whole through the proxy.
Usage: sdk.py PROXY_URL
"""

import sys

import anthropic
import openai

BASE = sys.argv[1]
FILLER = "output line of a long tool result\n" * 80
CALLS = 24


def anthropic_session():
    client = anthropic.Anthropic(base_url=BASE, api_key="sk-ant-dummy-key", max_retries=0)
    tools = [{"name": "read_part", "description": "Reads a part.",
              "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}}}}]
    messages = [{"role": "user", "content": "Read the parts and summarise them."}]
    for n in range(CALLS):
        kwargs = dict(model="claude-sonnet-4-5", max_tokens=100, tools=tools, messages=messages)
        if n % 2:
            with client.messages.stream(**kwargs) as stream:
                text = "".join(stream.text_stream)
                final = stream.get_final_message()
            assert text == "scripted", text
        else:
            final = client.messages.create(**kwargs)
        assert final.content[0].text == "scripted", final
        assert final.usage.output_tokens == 20
        messages.append({"role": "assistant", "content": [
            {"type": "text", "text": "reading"},
            {"type": "tool_use", "id": f"toolu_{n}", "name": "read_part", "input": {"file_path": f"p{n}"}}]})
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": f"part {n}\n" + FILLER}]})
    print(f"anthropic SDK {anthropic.__version__}: {CALLS} calls answered")


def openai_sessions():
    client = openai.OpenAI(base_url=BASE + "/v1", api_key="sk-dummy-key", max_retries=0)
    messages = [{"role": "user", "content": "Read the parts and summarise them."}]
    for n in range(CALLS):
        if n % 2:
            stream = client.chat.completions.create(model="gpt-4o", messages=messages, stream=True,
                                                    stream_options={"include_usage": True})
            text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
        else:
            text = client.chat.completions.create(model="gpt-4o", messages=messages).choices[0].message.content
        assert text == "scripted", text
        messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"call_{n}", "type": "function", "function": {"name": "read", "arguments": "{}"}}]})
        messages.append({"role": "tool", "tool_call_id": f"call_{n}", "content": f"part {n}\n" + FILLER})
    items = [{"role": "user", "content": "Read the parts and summarise them."}]
    for n in range(CALLS):
        if n % 2:
            with client.responses.stream(model="gpt-5", input=items) as stream:
                text = "".join(e.delta for e in stream if e.type == "response.output_text.delta")
        else:
            text = client.responses.create(model="gpt-5", input=items).output_text
        assert text == "scripted", text
        items.append({"type": "function_call", "call_id": f"call_{n}", "name": "read", "arguments": "{}"})
        items.append({"type": "function_call_output", "call_id": f"call_{n}", "output": f"part {n}\n" + FILLER})
    print(f"openai SDK {openai.__version__}: {2 * CALLS} calls answered (chat, responses)")


anthropic_session()
openai_sessions()
