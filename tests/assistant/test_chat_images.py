"""A binary result in the assistant's tool loop: the model is told what it is, never its bytes."""

from __future__ import annotations

import base64
import json

from support.chat import new_conversation, turn
from support.fake_llm import FakeLLM, Reply
from support.images import png

from fable_core.assistant.service import Assistant
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller


async def test_the_model_is_told_an_images_type_and_size_not_its_bytes(
    ai_fable: Fable, assistant: Assistant, fake: FakeLLM, alice: Caller
) -> None:
    image = png(1, 2, 3)
    saved = await ai_fable.call("upload_image", {"content": base64.b64encode(image).decode()}, alice)
    conv = await new_conversation(ai_fable, alice)
    fake.replies.extend([Reply("", [("get_image", {"image_id": saved["id"]})]), Reply("A small PNG.")])
    events = await turn(assistant, alice, conv, "what is image 1?")
    result = next(e.data for e in events if e.event == "tool_result")
    assert result["ok"] and result["result"] == {"content_type": "image/png", "bytes": len(image),
                                                 "note": "binary content, not shown here"}
    shown = fake.chat_bodies()[1]["messages"][-1]
    assert shown["role"] == "tool" and json.loads(shown["content"])["result"]["bytes"] == len(image)
    assert base64.b64encode(image).decode()[:12] not in shown["content"]
