"""One cluster at a time: create, read, edit, delete and redeploy; its status and grants."""
