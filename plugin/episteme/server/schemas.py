"""The typed request bodies of the JSON routes (pydantic models: FastAPI validates them and
lists them in ``/openapi.json``).  The responses are the library's own JSON, documented on each
route.  (No class docstrings: pydantic would publish them as schema descriptions.)"""

from pydantic import AliasChoices, BaseModel, Field


class ChatRequest(BaseModel):  # POST /chat
    # `question` is accepted too: the MCP `chat` tool and the CLI call it that (issue 34)
    query: str = Field(..., min_length=1, max_length=4000,
                       validation_alias=AliasChoices("query", "question"),
                       description="the question (the name `question` is accepted too)")


class TraceRequest(BaseModel):  # POST /trace
    answer: str = Field(..., min_length=1, max_length=20000, description="the answer text")
    sections: list[str] | None = Field(None, description="wiki section ids it was written from")
    papers: list[str] | None = Field(None, description="paper file names to search")
    top: int = Field(3, ge=1, le=20, description="passages reported per claim")
