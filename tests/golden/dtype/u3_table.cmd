dtype u3 --table
