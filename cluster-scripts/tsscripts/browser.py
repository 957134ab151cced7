"""Headless Chromium through its WebDriver (Debian's chromium, chromium-driver
and python3-selenium: cluster-scripts/setup.sh --browser), for the board's
browser test and bench-board.sh."""
import shutil


def missing():
    """What is missing to drive Chromium, or None when everything is there."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "Python's selenium"
    if not shutil.which("chromium") or not shutil.which("chromedriver"):
        return "chromium or chromedriver"
    return None


def headless_chromium(window="1400,1100"):
    """A WebDriver for a new headless Chromium (as root: without its sandbox)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    opts.binary_location = shutil.which("chromium")
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              f"--window-size={window}"):
        opts.add_argument(a)
    return webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=opts)
