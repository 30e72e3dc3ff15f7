import pytest
from shop.jobs import app

from acta import Acta


@pytest.fixture
def acta_app() -> Acta:
    return app
